"""The part of Go's fmt and strconv that templates reach: Sprint, Sprintf, Sprintln, Quote."""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

from rollout_workers.notifications.gotemplate.functions import Func
from rollout_workers.notifications.gotemplate.gotime import GoDuration, GoTime
from rollout_workers.notifications.gotemplate.values import MISSING, GoInt, type_name

_ESC = {
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
    "\\": "\\\\",
}


def go_quote(s: str, quote: str = '"') -> str:
    """strconv.Quote."""
    out = [quote]
    for c in s:
        if c == quote:
            out.append("\\" + c)
        elif c in _ESC:
            out.append(_ESC[c])
        elif c.isprintable() or c == " ":
            out.append(c)
        else:
            cp = ord(c)
            if cp < 0x80:
                out.append(f"\\x{cp:02x}")
            elif cp < 0x10000:
                out.append(f"\\u{cp:04x}")
            else:
                out.append(f"\\U{cp:08x}")
    out.append(quote)
    return "".join(out)


def shortest_digits(f: float) -> tuple[str, int]:
    """Shortest round-trip decimal digits of abs(f), and dp such that abs(f) = 0.DIGITS * 10**dp."""
    _, digits, exp = Decimal(repr(abs(f))).as_tuple()
    assert isinstance(exp, int)
    ds = "".join(map(str, digits))
    dp = len(ds) + exp
    stripped = ds.lstrip("0")
    dp -= len(ds) - len(stripped)
    stripped = stripped.rstrip("0")
    if not stripped:
        return "0", 1
    return stripped, dp


def format_float_g(f: float) -> str:
    """strconv.FormatFloat(f, 'g', -1, 64), which fmt's %v uses."""
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "+Inf" if f > 0 else "-Inf"
    neg = f < 0 or (f == 0 and math.copysign(1, f) < 0)
    sign = "-" if neg else ""
    ds, dp = shortest_digits(f)
    if ds == "0":
        return sign + "0"
    exp = dp - 1
    if exp < -4 or exp >= 6:  # shortest: precision 6 decides, as strconv does
        mant = ds[0] + ("." + ds[1:] if len(ds) > 1 else "")
        return f"{sign}{mant}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if dp <= 0:
        return f"{sign}0.{'0' * -dp}{ds}"
    if dp >= len(ds):
        return sign + ds + "0" * (dp - len(ds))
    return f"{sign}{ds[:dp]}.{ds[dp:]}"


def sprint_value(v: Any, verb: str = "v") -> str:
    """fmt's %v (and %s/%d applied element-wise inside slices and maps)."""
    if v is None or v is MISSING:
        return "<nil>" if verb == "v" else f"%!{verb}(<nil>)"
    if isinstance(v, list):
        return "[" + " ".join(sprint_value(e, verb) for e in v) + "]"
    if isinstance(v, dict):
        parts = [
            f"{sprint_value(k, verb)}:{sprint_value(v[k], verb)}"
            for k in sorted(v, key=lambda s: s.encode())
        ]
        return "map[" + " ".join(parts) + "]"
    if verb == "v":
        return _plain(v)
    return format_one(verb, {}, None, None, v)


def _plain(v: Any) -> str:
    if isinstance(v, (GoTime, GoDuration)):
        return str(v)
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(int(v))
    if isinstance(v, float):
        return format_float_g(v)
    if isinstance(v, str):
        return v
    if callable(v) or isinstance(v, Func):  # Go prints a func's address
        return f"0x{id(v):x}"
    return str(v)


def sprint(*args: Any) -> str:
    """fmt.Sprint: a space between operands when neither is a string."""
    out: list[str] = []
    prev_string = True
    for i, a in enumerate(args):
        is_string = isinstance(a, str)
        if i > 0 and not is_string and not prev_string:
            out.append(" ")
        out.append(sprint_value(a))
        prev_string = is_string
    return "".join(out)


def sprintln(*args: Any) -> str:
    return " ".join(sprint_value(a) for a in args) + "\n"


def _pad(
    s: str, flags: dict[str, bool], width: int | None, zero_ok: bool = True, numeric: bool = False
) -> str:
    if width is None or len(s) >= width:
        return s
    if flags.get("-"):
        return s + " " * (width - len(s))
    if flags.get("0") and zero_ok:
        if numeric and s and s[0] in "+- ":
            return s[0] + "0" * (width - len(s)) + s[1:]
        return "0" * (width - len(s)) + s
    return " " * (width - len(s)) + s


def _bad(verb: str, v: Any, flags: dict[str, bool], width: int | None, prec: int | None) -> str:
    """fmt's bad-verb text: the value printed with %v under the same flags, width, precision."""
    if v is None or v is MISSING:
        return f"%!{verb}(<nil>)"
    return f"%!{verb}({type_name(v)}={format_one('v', flags, width, prec, v)})"


def format_one(
    verb: str, flags: dict[str, bool], width: int | None, prec: int | None, v: Any
) -> str:
    if verb == "T":
        return _pad(type_name(v) if v is not None else "<nil>", flags, width)
    if isinstance(v, (list, dict)):
        # Width and precision apply to each element; a nil element prints <nil> for any verb.
        if isinstance(v, list):
            return "[" + " ".join(_element(verb, flags, width, prec, e) for e in v) + "]"
        parts = [
            f"{_element(verb, flags, width, prec, k)}:{_element(verb, flags, width, prec, v[k])}"
            for k in sorted(v, key=lambda s: s.encode())
        ]
        return "map[" + " ".join(parts) + "]"
    if v is None or v is MISSING:
        if verb == "v":
            return _pad("<nil>", flags, width)
        return _bad(verb, v, flags, width, prec)
    if isinstance(v, (GoTime, GoDuration)) and verb in "vsxXq":  # fmt.Stringer
        return _format_str("s" if verb == "v" else verb, flags, width, prec, str(v))
    if isinstance(v, GoTime):  # Go prints the struct's private fields: not reproducible
        return f"%!{verb}(time.Time={v})"
    if isinstance(v, bool):
        if verb in "vt":
            return _pad("true" if v else "false", flags, width)
        return _bad(verb, v, flags, width, prec)
    if isinstance(v, int):
        return _format_int(verb, flags, width, prec, int(v), v)
    if isinstance(v, float):
        return _format_float(verb, flags, width, prec, v)
    if isinstance(v, str):
        return _format_str(verb, flags, width, prec, v)
    if verb == "v":
        return _pad(_plain(v), flags, width)
    return _bad(verb, v, flags, width, prec)


def _element(verb: str, flags: dict[str, bool], width: int | None, prec: int | None, v: Any) -> str:
    if v is None:
        return _pad("<nil>", flags, width)
    return format_one(verb, flags, width, prec, v)


def _sign(n: float, flags: dict[str, bool]) -> str:
    if n < 0:
        return "-"
    if flags.get("+"):
        return "+"
    if flags.get(" "):
        return " "
    return ""


def _format_int(  # noqa: PLR0917
    verb: str, flags: dict[str, bool], width: int | None, prec: int | None, n: int, orig: Any
) -> str:
    if verb in "vd":
        digits = str(abs(n))
    elif verb == "x":
        digits = f"{abs(n):x}"
        if flags.get("#"):
            digits = "0x" + digits
    elif verb == "X":
        digits = f"{abs(n):X}"
        if flags.get("#"):
            digits = "0X" + digits
    elif verb == "o":
        digits = f"{abs(n):o}"
    elif verb == "b":
        digits = f"{abs(n):b}"
    elif verb == "c":
        return _pad(chr(n) if 0 <= n <= 0x10FFFF else "\ufffd", flags, width)
    elif verb == "q":
        return _pad(go_quote(chr(n), "'") if 0 <= n <= 0x10FFFF else "'\ufffd'", flags, width)
    elif verb == "U":
        return _pad(f"U+{n:04X}", flags, width)
    else:
        return _bad(verb, orig, flags, width, prec)
    if prec is not None:
        digits = digits.rjust(prec, "0")
        if prec == 0 and n == 0:
            digits = ""
    return _pad(_sign(n, flags) + digits, flags, width, zero_ok=prec is None, numeric=True)


def _format_float(
    verb: str, flags: dict[str, bool], width: int | None, prec: int | None, f: float
) -> str:
    if math.isinf(f) or math.isnan(f):
        s = "NaN" if math.isnan(f) else ("+Inf" if f > 0 else "-Inf")
        return _pad(s, flags, width, zero_ok=False)
    if verb == "v" and prec is None:
        s = format_float_g(f)
        if flags.get("+") and not s.startswith("-"):
            s = "+" + s
        return _pad(s, flags, width)
    if verb in "xX":
        s = _hex_float(abs(f), prec)
        if verb == "X":
            s = s.upper()
    elif verb in "fF":
        s = f"{abs(f):.{6 if prec is None else prec}f}"
    elif verb in "eE":
        s = f"{abs(f):.{6 if prec is None else prec}e}"
        if verb == "E":
            s = s.upper()
    elif verb in "gGv":
        s = format_float_g(abs(f)) if prec is None else f"{abs(f):.{prec}g}"
        if verb == "G":
            s = s.upper()
    else:
        return _bad(verb, f, flags, width, prec)
    neg = f < 0 or (f == 0 and math.copysign(1, f) < 0)
    sign = "-" if neg else ("+" if flags.get("+") else (" " if flags.get(" ") else ""))
    return _pad(sign + s, flags, width, numeric=True)


def _hex_float(f: float, prec: int | None) -> str:
    """strconv's 'x' format: 0x1.e848p+19 (shortest unless a precision is given)."""
    if f == 0:
        mant, exp = "0", 0
    else:
        h = f.hex()  # 0x1.e848000000000p+19 (normal) or 0x0.0000000000001p-1022 (subnormal)
        m, e = h[2:].split("p")
        exp = int(e)
        lead, _, frac = m.partition(".")
        if lead == "0":  # normalise a subnormal so that it starts with 1
            bits = int(frac, 16)
            shift = 52 - bits.bit_length() + 1
            bits <<= shift
            exp -= shift
            frac = f"{bits & ((1 << 52) - 1):013x}"
        mant = "1." + frac if frac else "1"
        mant = mant.rstrip("0").rstrip(".")
    if prec is not None:
        lead, _, frac = mant.partition(".")
        value = int(lead + frac.ljust(13, "0"), 16)
        drop = (13 - prec) * 4
        if drop > 0:
            half = 1 << (drop - 1)
            rem = value & ((1 << drop) - 1)
            value >>= drop
            if rem > half or (rem == half and value & 1):
                value += 1
            if value >> (prec * 4) >= 2:
                value >>= 1
                exp += 1
        digits = f"{value:x}"
        mant = digits[0] + ("." + digits[1:].rjust(prec, "0") if prec > 0 else "")
    return f"0x{mant}p{'-' if exp < 0 else '+'}{abs(exp):02d}"


def _format_str(
    verb: str, flags: dict[str, bool], width: int | None, prec: int | None, s: str
) -> str:
    if verb in "vs":
        if prec is not None:
            s = s[:prec]
        return _pad(s, flags, width)
    if verb == "q":
        if prec is not None:
            s = s[:prec]
        if flags.get("#") and "`" not in s and all(c.isprintable() or c == "\t" for c in s):
            return _pad("`" + s + "`", flags, width)
        return _pad(go_quote(s), flags, width)
    if verb in "xX":
        b = s.encode()
        if prec is not None:
            b = b[:prec]
        h = b.hex()
        if verb == "X":
            h = h.upper()
        return _pad(h, flags, width)
    return _bad(verb, s, flags, width, prec)


def _too_large(x: int) -> bool:
    return x > 1_000_000 or x < -1_000_000


def _parsenum(s: str, i: int) -> tuple[int | None, int]:
    """fmt's parsenum: a width or precision; a crazy long number swallows the rest."""
    num = 0
    isnum = False
    while i < len(s) and "0" <= s[i] <= "9":
        if _too_large(num):
            return None, len(s)
        num = num * 10 + ord(s[i]) - 48
        isnum = True
        i += 1
    return (num if isnum else None), i


def sprintf(fmt: str, *args: Any) -> str:
    """fmt.Sprintf for the verbs and flags templates use."""
    out: list[str] = []
    argi = 0
    i = 0
    n = len(fmt)
    while i < n:
        c = fmt[i]
        if c != "%":
            j = fmt.find("%", i)
            if j < 0:
                j = n
            out.append(fmt[i:j])
            i = j
            continue
        i += 1
        flags: dict[str, bool] = {}
        while i < n and fmt[i] in "+-# 0":
            flags[fmt[i]] = True
            i += 1
        width: int | None = None
        if i < n and fmt[i] == "*":
            i += 1
            if (
                argi < len(args)
                and isinstance(args[argi], int)
                and not isinstance(args[argi], bool)
                and not _too_large(int(args[argi]))
            ):
                width = int(args[argi])
                if width < 0:
                    flags["-"] = True
                    width = -width
            else:
                out.append("%!(BADWIDTH)")
            argi += 1
        else:
            width, i = _parsenum(fmt, i)
        prec: int | None = None
        if i < n and fmt[i] == ".":
            i += 1
            if i < n and fmt[i] == "*":
                i += 1
                a = args[argi] if argi < len(args) else None
                if isinstance(a, int) and not isinstance(a, bool) and not _too_large(int(a)):
                    prec = int(a) if a >= 0 else None
                else:
                    out.append("%!(BADPREC)")
                argi += 1
            else:
                prec, i = _parsenum(fmt, i)
                prec = prec or 0
        if i >= n:
            out.append("%!(NOVERB)")
            break
        verb = fmt[i]
        i += 1
        if verb == "%":
            out.append("%")
            continue
        if argi >= len(args):
            out.append(f"%!{verb}(MISSING)")
            continue
        arg = args[argi]
        argi += 1
        if verb not in "vTtbcdoOqxXUeEfFgGsp":
            out.append(_bad(verb, arg, flags, width, prec))
            continue
        out.append(format_one(verb, flags, width, prec, arg))
    if argi < len(args):
        extra = ", ".join(
            "<nil>" if a is None else f"{type_name(a)}={sprint_value(a)}" for a in args[argi:]
        )
        out.append(f"%!(EXTRA {extra})")
    return "".join(out)


__all__ = ["GoInt", "format_float_g", "go_quote", "sprint", "sprintf", "sprintln"]

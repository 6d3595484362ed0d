"""Go's time.Time and time.Duration as template values: Format/Parse layouts, String(), and
the methods a template calls on them (``.Format``, ``.UTC``, ``.Unix``, ...).

There is no local time zone: "Local" is UTC (reading TZ or /etc/localtime would read the
environment and files); other named zones are refused rather than guessed.
"""

from __future__ import annotations

import time as _time
from dataclasses import dataclass
from typing import Any, ClassVar

from rollout_workers.notifications.gotemplate.functions import Func, GoError
from rollout_workers.notifications.gotemplate.values import GoInt, Uint8


def days_from_civil(y: int, m: int, d: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (any year, year 0 included)."""
    y -= m <= 2
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def _is_leap(y: int) -> bool:
    return y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)


def _days_in(m: int, y: int) -> int:
    if m == 2:
        return 29 if _is_leap(y) else 28
    return 30 if m in (4, 6, 9, 11) else 31


@dataclass(frozen=True)
class Civil:
    year: int
    month: int
    day: int
    hour: int
    minute: int
    second: int
    weekday: int  # 0 = Sunday
    yday: int  # 1..366


def civil_from_seconds(secs: int) -> Civil:
    days, rem = divmod(secs, 86400)
    z = days + 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + 3 if mp < 10 else mp - 9
    y = yoe + era * 400 + (m <= 2)
    yday = days - days_from_civil(y, 1, 1) + 1
    return Civil(y, m, d, rem // 3600, rem % 3600 // 60, rem % 60, (days + 4) % 7, yday)


LONG_MONTHS = [
    "January", "February", "March", "April", "May", "June", "July", "August", "September",
    "October", "November", "December",
]  # fmt: skip
SHORT_MONTHS = [m[:3] for m in LONG_MONTHS]
LONG_DAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
SHORT_DAYS = [d[:3] for d in LONG_DAYS]

(
    LONG_MONTH, MONTH, NUM_MONTH, ZERO_MONTH, LONG_WEEKDAY, WEEKDAY, DAY, UNDER_DAY, ZERO_DAY,
    UNDER_YEARDAY, ZERO_YEARDAY, HOUR, HOUR12, ZERO_HOUR12, MINUTE, ZERO_MINUTE, SECOND,
    ZERO_SECOND, LONG_YEAR, YEAR, PM, LOWER_PM, TZ, ISO_TZ, ISO_SECONDS_TZ, ISO_SHORT_TZ,
    ISO_COLON_TZ, ISO_COLON_SECONDS_TZ, NUM_TZ, NUM_SECONDS_TZ, NUM_SHORT_TZ, NUM_COLON_TZ,
    NUM_COLON_SECONDS_TZ, FRAC0, FRAC9,
) = range(1, 36)  # fmt: skip

_STD0X = [ZERO_MONTH, ZERO_DAY, ZERO_HOUR12, ZERO_MINUTE, ZERO_SECOND, YEAR]
_TZ_CHUNKS = [
    ("-070000", NUM_SECONDS_TZ), ("-07:00:00", NUM_COLON_SECONDS_TZ), ("-0700", NUM_TZ),
    ("-07:00", NUM_COLON_TZ), ("-07", NUM_SHORT_TZ),
]  # fmt: skip
_ISO_CHUNKS = [
    ("Z070000", ISO_SECONDS_TZ), ("Z07:00:00", ISO_COLON_SECONDS_TZ), ("Z0700", ISO_TZ),
    ("Z07:00", ISO_COLON_TZ), ("Z07", ISO_SHORT_TZ),
]  # fmt: skip


@dataclass(frozen=True)
class Std:
    code: int
    text: str  # the layout element, e.g. "2006" or ".000"
    digits: int = 0  # fractional seconds
    sep: str = "."


def _lower_start(s: str) -> bool:
    return bool(s) and "a" <= s[0] <= "z"


def next_std_chunk(layout: str) -> tuple[str, Std | None, str]:
    """time.nextStdChunk: the text before the first layout element, the element, the rest."""
    n = len(layout)
    for i, c in enumerate(layout):
        rest = layout[i:]
        if c == "J" and rest.startswith("Jan"):
            if rest.startswith("January"):
                return layout[:i], Std(LONG_MONTH, "January"), layout[i + 7 :]
            if not _lower_start(layout[i + 3 :]):
                return layout[:i], Std(MONTH, "Jan"), layout[i + 3 :]
        elif c == "M" and n >= i + 3:
            if rest.startswith("Mon"):
                if rest.startswith("Monday"):
                    return layout[:i], Std(LONG_WEEKDAY, "Monday"), layout[i + 6 :]
                if not _lower_start(layout[i + 3 :]):
                    return layout[:i], Std(WEEKDAY, "Mon"), layout[i + 3 :]
            if rest.startswith("MST"):
                return layout[:i], Std(TZ, "MST"), layout[i + 3 :]
        elif c == "0":
            if n >= i + 2 and "1" <= layout[i + 1] <= "6":
                return layout[:i], Std(_STD0X[ord(layout[i + 1]) - 49], rest[:2]), layout[i + 2 :]
            if rest.startswith("002"):
                return layout[:i], Std(ZERO_YEARDAY, "002"), layout[i + 3 :]
        elif c == "1":
            if rest.startswith("15"):
                return layout[:i], Std(HOUR, "15"), layout[i + 2 :]
            return layout[:i], Std(NUM_MONTH, "1"), layout[i + 1 :]
        elif c == "2":
            if rest.startswith("2006"):
                return layout[:i], Std(LONG_YEAR, "2006"), layout[i + 4 :]
            return layout[:i], Std(DAY, "2"), layout[i + 1 :]
        elif c == "_":
            if rest.startswith("_2"):
                if rest.startswith("_2006"):
                    return layout[: i + 1], Std(LONG_YEAR, "2006"), layout[i + 5 :]
                return layout[:i], Std(UNDER_DAY, "_2"), layout[i + 2 :]
            if rest.startswith("__2"):
                return layout[:i], Std(UNDER_YEARDAY, "__2"), layout[i + 3 :]
        elif c in "345":
            code = {"3": HOUR12, "4": MINUTE, "5": SECOND}[c]
            return layout[:i], Std(code, c), layout[i + 1 :]
        elif c == "P" and rest.startswith("PM"):
            return layout[:i], Std(PM, "PM"), layout[i + 2 :]
        elif c == "p" and rest.startswith("pm"):
            return layout[:i], Std(LOWER_PM, "pm"), layout[i + 2 :]
        elif c == "-":
            for text, code in _TZ_CHUNKS:
                if rest.startswith(text):
                    return layout[:i], Std(code, text), layout[i + len(text) :]
        elif c == "Z":
            for text, code in _ISO_CHUNKS:
                if rest.startswith(text):
                    return layout[:i], Std(code, text), layout[i + len(text) :]
        elif c in ".," and i + 1 < n and layout[i + 1] in "09":
            ch = layout[i + 1]
            j = i + 1
            while j < n and layout[j] == ch:
                j += 1
            if not (j < n and layout[j].isdigit() and layout[j].isascii()):
                code = FRAC0 if ch == "0" else FRAC9
                return layout[:i], Std(code, layout[i:j], j - (i + 1), c), layout[j:]
    return layout, None, ""


class GoDuration(int):
    """time.Duration (nanoseconds); prints as Go's Duration.String()."""

    __slots__ = ()
    GO_TYPE = "time.Duration"

    def __str__(self) -> str:
        return duration_string(int(self))


def duration_string(d: int) -> str:
    """time.Duration.String: 1h2m3.5s, 1.5ms, 0s."""
    if d == 0:
        return "0s"
    neg = d < 0
    u = -d if neg else d
    if u < 1_000_000_000:
        for unit, size in (("ns", 1), ("µs", 1_000), ("ms", 1_000_000)):
            if u < size * 1000:
                return ("-" if neg else "") + _frac(u, size) + unit
    h, rem = divmod(u, 3_600_000_000_000)
    m, rem = divmod(rem, 60_000_000_000)
    s = _frac(rem, 1_000_000_000) + "s"
    out = (f"{h}h" if h else "") + (f"{m}m" if h or m else "") + s
    return ("-" if neg else "") + out


def _frac(v: int, unit: int) -> str:
    whole, frac = divmod(v, unit)
    if not frac:
        return str(whole)
    digits = len(str(unit)) - 1
    return f"{whole}." + f"{frac:0{digits}d}".rstrip("0")


@dataclass(frozen=True)
class GoTime:
    """A time.Time: seconds and nanoseconds since the Unix epoch, in a fixed zone."""

    sec: int
    nsec: int = 0
    offset: int = 0  # seconds east of UTC
    zone: str = "UTC"  # the abbreviation Format prints for MST ("" prints the offset)

    GO_TYPE: ClassVar[str] = "time.Time"

    @staticmethod
    def from_unix(sec: int, nsec: int = 0) -> GoTime:
        return GoTime(sec, nsec)

    @staticmethod
    def now() -> GoTime:
        ns = _time.time_ns()
        return GoTime(ns // 1_000_000_000, ns % 1_000_000_000)

    def civil(self) -> Civil:
        return civil_from_seconds(self.sec + self.offset)

    def utc(self) -> GoTime:
        return GoTime(self.sec, self.nsec)

    def is_zero(self) -> bool:
        return self.sec == _ZERO_SEC and self.nsec == 0

    def format(self, layout: str) -> str:
        return format_time(self, layout)

    def __str__(self) -> str:
        return self.format("2006-01-02 15:04:05.999999999 -0700 MST")


_ZERO_SEC = -62135596800  # 0001-01-01T00:00:00Z


def _pad(n: int, width: int, ch: str = "0") -> str:
    s = str(abs(n)).rjust(width, ch)
    return "-" + s if n < 0 else s


def format_time(t: GoTime, layout: str) -> str:
    c = t.civil()
    out: list[str] = []
    while layout:
        prefix, std, layout = next_std_chunk(layout)
        out.append(prefix)
        if std is None:
            break
        k = std.code
        if k == YEAR:
            out.append(_pad(c.year % 100, 2))
        elif k == LONG_YEAR:
            out.append(_pad(c.year, 4))
        elif k == MONTH:
            out.append(SHORT_MONTHS[c.month - 1])
        elif k == LONG_MONTH:
            out.append(LONG_MONTHS[c.month - 1])
        elif k == NUM_MONTH:
            out.append(str(c.month))
        elif k == ZERO_MONTH:
            out.append(_pad(c.month, 2))
        elif k == WEEKDAY:
            out.append(SHORT_DAYS[c.weekday])
        elif k == LONG_WEEKDAY:
            out.append(LONG_DAYS[c.weekday])
        elif k == DAY:
            out.append(str(c.day))
        elif k == UNDER_DAY:
            out.append(_pad(c.day, 2, " "))
        elif k == ZERO_DAY:
            out.append(_pad(c.day, 2))
        elif k == UNDER_YEARDAY:
            out.append(_pad(c.yday, 3, " "))
        elif k == ZERO_YEARDAY:
            out.append(_pad(c.yday, 3))
        elif k == HOUR:
            out.append(_pad(c.hour, 2))
        elif k in (HOUR12, ZERO_HOUR12):
            hr = c.hour % 12 or 12
            out.append(str(hr) if k == HOUR12 else _pad(hr, 2))
        elif k == MINUTE:
            out.append(str(c.minute))
        elif k == ZERO_MINUTE:
            out.append(_pad(c.minute, 2))
        elif k == SECOND:
            out.append(str(c.second))
        elif k == ZERO_SECOND:
            out.append(_pad(c.second, 2))
        elif k in (PM, LOWER_PM):
            s = "PM" if c.hour >= 12 else "AM"
            out.append(s if k == PM else s.lower())
        elif k in (ISO_TZ, ISO_SECONDS_TZ, ISO_SHORT_TZ, ISO_COLON_TZ, ISO_COLON_SECONDS_TZ) and (
            t.offset == 0
        ):
            out.append("Z")
        elif k in (
            ISO_TZ, ISO_SECONDS_TZ, ISO_SHORT_TZ, ISO_COLON_TZ, ISO_COLON_SECONDS_TZ, NUM_TZ,
            NUM_SECONDS_TZ, NUM_SHORT_TZ, NUM_COLON_TZ, NUM_COLON_SECONDS_TZ,
        ):  # fmt: skip
            zone = t.offset // 60
            absoffset = abs(t.offset)
            sign = "-" if zone < 0 else "+"
            zone = abs(zone)
            s = sign + _pad(zone // 60, 2)
            if k in (ISO_COLON_TZ, NUM_COLON_TZ, ISO_COLON_SECONDS_TZ, NUM_COLON_SECONDS_TZ):
                s += ":"
            if k not in (NUM_SHORT_TZ, ISO_SHORT_TZ):
                s += _pad(zone % 60, 2)
            if k in (ISO_SECONDS_TZ, NUM_SECONDS_TZ, NUM_COLON_SECONDS_TZ, ISO_COLON_SECONDS_TZ):
                if k in (NUM_COLON_SECONDS_TZ, ISO_COLON_SECONDS_TZ):
                    s += ":"
                s += _pad(absoffset % 60, 2)
            out.append(s)
        elif k == TZ:
            if t.zone:
                out.append(t.zone)
            else:
                zone = t.offset // 60
                sign = "-" if zone < 0 else "+"
                zone = abs(zone)
                out.append(sign + _pad(zone // 60, 2) + _pad(zone % 60, 2))
        elif k in (FRAC0, FRAC9):
            digits = f"{t.nsec:09d}"[: std.digits]
            if k == FRAC9:
                digits = digits.rstrip("0")
                if digits:
                    out.append(std.sep + digits)
            else:
                out.append(std.sep + digits)
    return "".join(out)


class ParseError(Exception):
    pass


def _time_quote(s: str) -> str:
    out = ['"']
    for ch in s:
        if ch in '"\\':
            out.append("\\" + ch)
        elif " " <= ch < "\x7f":
            out.append(ch)
        else:
            out.extend(f"\\x{b:02x}" for b in ch.encode())
    out.append('"')
    return "".join(out)


def _parse_error(
    layout: str, value: str, layout_elem: str, value_elem: str, msg: str
) -> ParseError:
    if msg:
        return ParseError("parsing time " + _time_quote(value) + msg)
    return ParseError(
        f"parsing time {_time_quote(value)} as {_time_quote(layout)}: cannot parse "
        f"{_time_quote(value_elem)} as {_time_quote(layout_elem)}"
    )


class _Bad(Exception):
    pass


def _getnum(s: str, fixed: bool, maxdigits: int = 2) -> tuple[int, str]:
    n = 0
    while n < min(maxdigits, len(s)) and "0" <= s[n] <= "9":
        n += 1
    if n == 0 or (fixed and n < maxdigits):
        raise _Bad
    return int(s[:n]), s[n:]


def _lookup(tab: list[str], val: str) -> tuple[int, str]:
    for i, v in enumerate(tab):
        if len(val) >= len(v) and val[: len(v)].lower() == v.lower():
            return i, val[len(v) :]
    raise _Bad


def _skip(value: str, prefix: str) -> str:
    while prefix:
        if prefix[0] == " ":
            if value and value[0] != " ":
                raise _Bad
            prefix = prefix.lstrip(" ")
            value = value.lstrip(" ")
            continue
        if not value or value[0] != prefix[0]:
            raise _Bad
        prefix, value = prefix[1:], value[1:]
    return value


def _tz_name_len(value: str) -> int:
    if len(value) < 3:
        return 0
    if value[:4] in ("ChST", "MeST"):
        return 4
    n = 0
    while n < 6 and n < len(value) and "A" <= value[n] <= "Z":
        n += 1
    if n == 3:
        return 3
    if n == 4 and (value[3] == "T" or value[:4] == "WITA"):
        return 4
    if n == 5 and value[4] == "T":
        return 5
    return 0


def _nanos(value: str, nbytes: int) -> int:
    digits = value[1:nbytes]
    if not digits.isdigit():
        raise _Bad
    return int(digits[:9].ljust(9, "0"))


def parse_time(layout: str, value: str) -> GoTime:
    """time.Parse (Local is UTC here)."""
    alayout, avalue = layout, value
    am = pm = False
    year, month, day, yday = 0, -1, -1, -1
    hour = minute = sec = nsec = 0
    utc = False
    zone_offset = -1
    zone_name = ""
    while True:
        prefix, std, suffix = next_std_chunk(layout)
        try:
            value = _skip(value, prefix)
        except _Bad:
            raise _parse_error(alayout, avalue, prefix, value, "") from None
        if std is None:
            if value:
                raise _parse_error(
                    alayout, avalue, "", value, ": extra text: " + _time_quote(value)
                )
            break
        layout = suffix
        hold = value
        range_err = ""
        k = std.code
        try:
            if k == YEAR:
                if len(value) < 2 or not value[:2].isdigit():
                    raise _Bad
                year = int(value[:2])
                value = value[2:]
                year += 1900 if year >= 69 else 2000
            elif k == LONG_YEAR:
                if len(value) < 4 or not value[:4].isdigit():
                    raise _Bad
                year, value = int(value[:4]), value[4:]
            elif k in (MONTH, LONG_MONTH):
                month, value = _lookup(SHORT_MONTHS if k == MONTH else LONG_MONTHS, value)
                month += 1
            elif k in (NUM_MONTH, ZERO_MONTH):
                month, value = _getnum(value, k == ZERO_MONTH)
                if not 1 <= month <= 12:
                    range_err = "month"
            elif k in (WEEKDAY, LONG_WEEKDAY):
                _, value = _lookup(SHORT_DAYS if k == WEEKDAY else LONG_DAYS, value)
            elif k in (DAY, UNDER_DAY, ZERO_DAY):
                if k == UNDER_DAY and value[:1] == " ":
                    value = value[1:]
                day, value = _getnum(value, k == ZERO_DAY)
            elif k in (UNDER_YEARDAY, ZERO_YEARDAY):
                for _ in range(2):
                    if k == UNDER_YEARDAY and value[:1] == " ":
                        value = value[1:]
                yday, value = _getnum(value, k == ZERO_YEARDAY, 3)
            elif k == HOUR:
                hour, value = _getnum(value, False)
                if not 0 <= hour < 24:
                    range_err = "hour"
            elif k in (HOUR12, ZERO_HOUR12):
                hour, value = _getnum(value, k == ZERO_HOUR12)
                if not 0 <= hour <= 12:
                    range_err = "hour"
            elif k in (MINUTE, ZERO_MINUTE):
                minute, value = _getnum(value, k == ZERO_MINUTE)
                if not 0 <= minute < 60:
                    range_err = "minute"
            elif k in (SECOND, ZERO_SECOND):
                sec, value = _getnum(value, k == ZERO_SECOND)
                if not 0 <= sec < 60:
                    range_err = "second"
                elif len(value) >= 2 and value[0] in ".," and value[1].isdigit():
                    _, nxt, _ = next_std_chunk(layout)
                    if nxt is None or nxt.code not in (FRAC0, FRAC9):
                        n = 2
                        while n < len(value) and "0" <= value[n] <= "9":
                            n += 1
                        nsec = _nanos(value, n)
                        value = value[n:]
            elif k in (PM, LOWER_PM):
                p = value[:2]
                value = value[2:]
                if p == ("PM" if k == PM else "pm"):
                    pm = True
                elif p == ("AM" if k == PM else "am"):
                    am = True
                else:
                    raise _Bad
            elif k in (
                ISO_TZ,
                ISO_SHORT_TZ,
                ISO_COLON_TZ,
                ISO_SECONDS_TZ,
                ISO_COLON_SECONDS_TZ,
            ) and (value[:1] == "Z"):
                value = value[1:]
                utc = True
            elif k >= ISO_TZ and k <= NUM_COLON_SECONDS_TZ:
                zone_offset, value = _parse_offset(k, value)
            elif k == TZ:
                if value[:3] == "UTC":
                    utc = True
                    value = value[3:]
                else:
                    n = _tz_name_len(value)
                    if not n:
                        raise _Bad
                    zone_name, value = value[:n], value[n:]
            elif k == FRAC0:
                ndigit = 1 + std.digits
                if len(value) < ndigit:
                    raise _Bad
                nsec = _nanos(value, ndigit)
                value = value[ndigit:]
            elif k == FRAC9 and len(value) >= 2 and value[0] in ".," and "0" <= value[1] <= "9":
                i = 0
                while i + 1 < len(value) and "0" <= value[i + 1] <= "9":
                    i += 1
                nsec = _nanos(value, 1 + i)
                value = value[1 + i :]
        except _Bad:
            raise _parse_error(alayout, avalue, std.text, hold, "") from None
        if range_err:
            raise _parse_error(alayout, avalue, std.text, value, f": {range_err} out of range")
    if pm and hour < 12:
        hour += 12
    elif am and hour == 12:
        hour = 0
    if yday >= 0:
        if not 1 <= yday <= (366 if _is_leap(year) else 365):
            raise _parse_error(alayout, avalue, "", value, ": day-of-year out of range")
        d = civil_from_seconds((days_from_civil(year, 1, 1) + yday - 1) * 86400)
        if month >= 0 and month != d.month:
            raise _parse_error(alayout, avalue, "", value, ": day-of-year does not match month")
        if day >= 0 and day != d.day:
            raise _parse_error(alayout, avalue, "", value, ": day-of-year does not match day")
        month, day = d.month, d.day
    else:
        month = 1 if month < 0 else month
        day = 1 if day < 0 else day
    if not 1 <= day <= _days_in(month, year):
        raise _parse_error(alayout, avalue, "", value, ": day out of range")
    local_sec = days_from_civil(year, month, day) * 86400 + hour * 3600 + minute * 60 + sec
    if utc:
        return GoTime(local_sec, nsec)
    if zone_offset != -1:
        if zone_offset == 0 and zone_name in ("", "UTC"):
            return GoTime(local_sec, nsec)
        return GoTime(local_sec - zone_offset, nsec, zone_offset, zone_name)
    if zone_name:
        return GoTime(local_sec, nsec, 0, zone_name)
    return GoTime(local_sec, nsec)


def _parse_offset(k: int, value: str) -> tuple[int, str]:
    if k in (ISO_COLON_TZ, NUM_COLON_TZ):
        if len(value) < 6 or value[3] != ":":
            raise _Bad
        sign, hh, mm, ss, value = value[0], value[1:3], value[4:6], "00", value[6:]
    elif k in (NUM_SHORT_TZ, ISO_SHORT_TZ):
        if len(value) < 3:
            raise _Bad
        sign, hh, mm, ss, value = value[0], value[1:3], "00", "00", value[3:]
    elif k in (ISO_COLON_SECONDS_TZ, NUM_COLON_SECONDS_TZ):
        if len(value) < 9 or value[3] != ":" or value[6] != ":":
            raise _Bad
        sign, hh, mm, ss, value = value[0], value[1:3], value[4:6], value[7:9], value[9:]
    elif k in (ISO_SECONDS_TZ, NUM_SECONDS_TZ):
        if len(value) < 7:
            raise _Bad
        sign, hh, mm, ss, value = value[0], value[1:3], value[3:5], value[5:7], value[7:]
    else:
        if len(value) < 5:
            raise _Bad
        sign, hh, mm, ss, value = value[0], value[1:3], value[3:5], "00", value[5:]
    hr, _ = _getnum(hh, True)
    mi, _ = _getnum(mm, True)
    se, _ = _getnum(ss, True)
    off = (hr * 60 + mi) * 60 + se
    if sign == "-":
        off = -off
    elif sign != "+":
        raise _Bad
    return off, value


# -- methods a template may call on a time.Time (a subset of Go's)


def _m(fn: Any, *params: str) -> Func:
    return Func(fn, ("any", *params))


TIME_METHODS: dict[str, Func] = {
    "Format": _m(format_time, "string"),
    "String": _m(str),
    "UTC": _m(GoTime.utc),
    "Local": _m(GoTime.utc),
    "Unix": _m(lambda t: t.sec),
    "UnixMilli": _m(lambda t: t.sec * 1000 + t.nsec // 1_000_000),
    "UnixNano": _m(lambda t: t.sec * 1_000_000_000 + t.nsec),
    "Year": _m(lambda t: _goint(t.civil().year)),
    "Day": _m(lambda t: _goint(t.civil().day)),
    "Hour": _m(lambda t: _goint(t.civil().hour)),
    "Minute": _m(lambda t: _goint(t.civil().minute)),
    "Second": _m(lambda t: _goint(t.civil().second)),
    "Nanosecond": _m(lambda t: _goint(t.nsec)),
    "YearDay": _m(lambda t: _goint(t.civil().yday)),
    "IsZero": _m(GoTime.is_zero),
    "Before": _m(lambda t, u: (t.sec, t.nsec) < (u.sec, u.nsec), "time"),
    "After": _m(lambda t, u: (t.sec, t.nsec) > (u.sec, u.nsec), "time"),
    "Equal": _m(lambda t, u: (t.sec, t.nsec) == (u.sec, u.nsec), "time"),
    "Sub": _m(lambda t, u: GoDuration((t.sec - u.sec) * 1_000_000_000 + t.nsec - u.nsec), "time"),
}

DURATION_METHODS: dict[str, Func] = {
    "String": _m(str),
    "Seconds": _m(lambda d: int(d) / 1e9),
    "Minutes": _m(lambda d: int(d) / 6e10),
    "Hours": _m(lambda d: int(d) / 3.6e12),
    "Milliseconds": _m(lambda d: int(d) // 1_000_000 if d >= 0 else -(-int(d) // 1_000_000)),
}


def _goint(v: int) -> Any:
    return GoInt(v)


# -- sprig's date functions


def _to_time(date: Any) -> GoTime:
    if isinstance(date, GoTime):
        return date
    if isinstance(date, int) and not isinstance(date, (bool, Uint8, GoDuration)):
        return GoTime(int(date))  # sprig: an int or int64 is Unix seconds
    return GoTime.now()  # sprig: anything else is "now"


def _zone(zone: str) -> None:
    if zone not in ("UTC", "Local", ""):
        raise GoError(f"time zone {zone!r} is not supported (only UTC; Local is UTC)")


def date_in_zone(fmt: str, date: Any, zone: str) -> str:
    _zone(zone)
    return format_time(_to_time(date).utc(), fmt)


def to_date(fmt: str, s: str) -> GoTime:
    try:
        return parse_time(fmt, s)
    except ParseError:
        return GoTime(_ZERO_SEC)


def unix_epoch(t: GoTime) -> str:
    return str(t.sec)


def ago(date: Any) -> str:
    t = _to_time(date) if not isinstance(date, GoTime) else date
    now = GoTime.now()
    d = (now.sec - t.sec) * 1_000_000_000 + now.nsec - t.nsec
    return duration_string(_round(d, 1_000_000_000))


def _round(d: int, m: int) -> int:
    r = d % m if d >= 0 else -((-d) % m)
    if d < 0:
        r = -r
        if r + r < m:
            return d + r
        return d - m + r
    if r + r < m:
        return d - r
    return d + m - r


def duration(sec: Any) -> str:
    n = 0
    if isinstance(sec, str):
        try:
            n = int(sec, 10) if sec.lstrip("+-").isdigit() else 0
        except ValueError:
            n = 0
    elif isinstance(sec, int) and not isinstance(sec, (bool, GoInt)):
        n = int(sec)
    return duration_string(n * 1_000_000_000)


def argo_time_parse(timestamp: str) -> GoTime:
    """Argo Rollouts' ``time.Parse`` template variable: time.Parse(time.RFC3339, s), panicking
    on error."""
    try:
        return parse_time("2006-01-02T15:04:05Z07:00", timestamp)
    except ParseError as e:
        raise GoError(str(e)) from None


def argo_time_now() -> GoTime:
    return GoTime.now()


def argo_time_vars() -> dict[str, Any]:
    """Argo Rollouts' ``time`` template variable (``call .time.Parse "..."``), a fresh map per
    render (sprig's ``set`` could otherwise change it for every later notification)."""
    return {
        "Parse": Func(argo_time_parse, ("string",), go_type="func(string) time.Time"),
        "Now": Func(argo_time_now, (), go_type="func() time.Time"),
    }


SPRIG_DATE: dict[str, Func] = {
    "date": Func(lambda fmt, d: date_in_zone(fmt, d, "Local"), ("string", "any")),
    "dateInZone": Func(date_in_zone, ("string", "any", "string")),
    "date_in_zone": Func(date_in_zone, ("string", "any", "string")),
    "htmlDate": Func(lambda d: date_in_zone("2006-01-02", d, "Local"), ("any",)),
    "htmlDateInZone": Func(lambda d, z: date_in_zone("2006-01-02", d, z), ("any", "string")),
    "now": Func(GoTime.now, ()),
    "toDate": Func(to_date, ("string", "string")),
    "unixEpoch": Func(unix_epoch, ("time",)),
    "ago": Func(ago, ("any",)),
    "duration": Func(duration, ("any",)),
}

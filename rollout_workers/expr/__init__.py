"""The sandboxed expr-lang evaluator (no Python `eval`; bounded steps and sizes).

Why this exists: Argo Rollouts' `successCondition` / `failureCondition` strings are written by
tenants in the expr-lang language (github.com/expr-lang/expr, formerly antonmedv/expr) and are
evaluated over the measured value bound to `result`; notification triggers' `when` conditions
are written in it too. Those strings must never reach Python's `eval`, must not be able to reach
any Python object, and must not be able to pin a worker or exhaust its memory. This package is a
small, self-contained implementation of the part of expr-lang that conditions use:

* a tokenizer and a precedence-climbing parser that mirror expr-lang's own (same operator table,
  same associativity, chained comparisons, `??` mixing rule, predicates with `#` and `.field`),
  producing a small syntax tree;
* a tree-walking evaluator over plain JSON-like values only: None, bool, int, float, str, list
  and dict with str keys. Anything else in `result` is converted (tuples, subclasses) or rejected
  before evaluation starts. Member access reads dict keys and list items, never attributes, so
  `result.__class__` is simply a missing key (nil) and `'x'.__len__` is an error;
* hard limits (`Limits`): source length, tree size and depth, an evaluation step budget (every
  node visit and every element a builtin touches costs a step, so time is bounded
  deterministically rather than by a wall clock), the size of every produced string and
  collection, and a total allocation budget per evaluation;
* `matches` runs on RE2, as in Go, linear in the subject; never on backtracking `re`.

Integers are Go's 64-bit ints (arithmetic wraps), `/` and `**` always produce floats, `%` is
integer-only and truncates toward zero, and comparing values of different kinds with `<` and
friends is an error while `==` between them is false, as in expr-lang's runtime.

Deliberate deviations from expr-lang: strings are indexed, sliced and measured in code points
(Go: bytes) and `s[i]` is a one-character string (Go: a byte value); `==` on maps is numeric-aware
like it is on arrays; the right operand of `&&`/`||` must be a bool too; map keys are strings;
`nil in map` is false; `default(x, d)` and `isNil(x)` test their argument (Argo's test `result`
whatever the argument, the same thing for the documented `default(result, d)`); `isNaN`/`isInf`
accept ints. Not supported (rejected at parse time as unknown names or unexpected tokens): `let`,
`$env`, `if/else`, method calls, and the builtins not listed in `builtins.FUNCTIONS` /
`builtins.PREDICATE_BUILTINS` (sort, groupBy, split, join, toJSON, bitwise, ...).

Modules, each importing only those below it (the `.importlinter` contract holds them to it):

* :mod:`.expression`: the entry points (`parse`, `Expression`, `check`, `evaluate_condition`,
  `evaluate_time`);
* :mod:`.parser` (tokens to a tree) and :mod:`.evaluator` (a tree to a value), independent;
* :mod:`.lexer` (source to tokens) and :mod:`.builtins` (the builtin functions, and the
  signatures of those taking a predicate);
* :mod:`.time` (Go's times and durations: `now()`, `date()`, `duration()`, their arithmetic)
  and :mod:`.regex` (the RE2 engine of `matches`);
* :mod:`.budget` (the protocol through which builtins charge the evaluation);
* :mod:`.nodes` (the syntax tree);
* :mod:`.values` (values, limits, errors, Go arithmetic and formatting).
"""

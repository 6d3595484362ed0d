"""The sandboxed expr-lang evaluator (no Python `eval`; bounded steps and sizes).

Analysis uses it for metric conditions, notifications for trigger conditions: :mod:`.expr`
(parse and evaluate), :mod:`.expr_builtins`, :mod:`.expr_regex` (RE2), :mod:`.expr_time`
(Go's time and duration values), :mod:`.expr_values`.
"""

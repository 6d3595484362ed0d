"""Argo Rollouts notifications.

Pure parts: :mod:`.gotemplate` (Go text/template and sprig), :mod:`.config` (the ConfigMap and
Secret, parsed), :mod:`.fields` (which template fields are templates), :mod:`.subscriptions`
(who is subscribed to a trigger for an object), :mod:`.selectors` (string label selectors),
:mod:`.triggers` (event reason to trigger; conditions on the sandboxed expr evaluator),
:mod:`.render` (templates to a notification, merged as the engine's templaters do),
:mod:`.state` (Argo's send rule, the engine's state keys).

Wired into the controller: :mod:`.source` (the configs that apply to an object, from the
watcher's cache), :mod:`.recorder` (an event, then its notifications), :mod:`.outbox` (an
event becomes a job in Redis and a key on the ``notifications`` workqueue), :mod:`.delivery`
(a worker sends a job once per destination), :mod:`.services` (one sender per service type).
"""

"""Argo Rollouts notifications (issue #19).

Modules: :mod:`.gotemplate` (the template engine), :mod:`.config` (the ConfigMap and Secret),
:mod:`.subscriptions` (who is subscribed to a trigger for an object), :mod:`.triggers` (event
reason to trigger name; conditions, evaluated through an injected expression evaluator),
:mod:`.selectors` (string label selectors), :mod:`.render` (templates to a notification, as
the engine's templaters merge them), :mod:`.state` (Argo's send rule, the engine's notified state,
send-once keys). All pure: no I/O, not yet wired into the controller.
"""

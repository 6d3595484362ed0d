"""Step plugins: canary steps (`steps[].plugin: {name, config}`) carried out by code outside
the controller.

Argo Rollouts runs each step plugin as a separate binary over RPC (hashicorp go-plugin), named
in the `argo-rollouts-config` ConfigMap's `stepPlugins`. Here a plugin is a Python object found
through the `rollout_workers.step_plugins` entry point group and enabled by name in settings
(`plugins.step`). `protocol` is what a plugin implements, `registry` finds and loads them,
`statemachine` drives them from a canary's plugin steps (the state machine of
`status.canary.stepPluginStatuses`), and `webhook` is the plugin shipped with the package: it
calls an HTTP endpoint, so plugins can be written in any language.
"""

"""The demo's made-up Prometheus, which analysis templates point at: `rollouts demo-prometheus`.

Not Kubernetes' metrics-server, and not the controller's own metrics (the leading watcher's
`/metrics`): a stand-in for the application's Prometheus. On the embedded defaults there is no
application to measure, yet canary analysis needs numbers to judge. This server makes them up
honestly and predictably: every ReplicaSet with available replicas counts as one version of an
app serving traffic, and its success rate follows from its image (see `series`). It answers them
the way real systems do, so templates written against it work unchanged against the real thing:

- `GET|POST /api/v1/query` is Prometheus' instant query API for instant vector selectors
  (`demo_success_rate{app="x",rollouts_pod_template_hash="abc"}`) and number literals; any other
  PromQL is a `bad_data` error, as Prometheus answers a query it cannot parse (see `query`).
- `GET /metrics/<name>?<label>=<value>...` answers `{"value": 0.99, "labels": {...}}` for the
  one matching series: a plain JSON endpoint for the `web` provider (`jsonPath: "{$.value}"`).
- `PUT /metrics/<name>?<label>=<value>...` with `{"value": 0.5}` sets a series by hand (DELETE
  removes it); `GET /metrics` lists every series in Prometheus' text format (see `server`).

`rollouts up` starts one and makes it the default Prometheus address of analysis
(`ROLLOUTS_ANALYSIS_PROMETHEUS_ADDRESS`) unless that is already set. It is one of the stand-ins
(standins/, a distribution of its own beside the controller's, which the image does not carry).
"""

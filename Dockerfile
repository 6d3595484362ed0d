FROM python:3.11-slim
WORKDIR /app
# The controller only: the stand-ins (standins/, the embedded API and the demo's Prometheus) are a
# distribution of their own, for the local stack and the tests (tests/unit/deploy/test_image.py).
COPY pyproject.toml README.md ./
COPY rollout_workers ./rollout_workers
COPY beat ./beat
RUN pip install --no-cache-dir . && useradd --uid 10001 rollouts
USER 10001
# Health (/healthz, /readyz) of every rollouts process; the leading watcher's metrics; Flower.
EXPOSE 8080 8090 5555
ENV PYTHONDONTWRITEBYTECODE=1
ENTRYPOINT ["rollouts"]

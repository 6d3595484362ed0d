FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY rollout_workers ./rollout_workers
COPY beat ./beat
RUN pip install --no-cache-dir . && useradd --uid 10001 rollouts
USER 10001
ENTRYPOINT ["rollouts"]

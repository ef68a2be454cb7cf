# rayservice-impact: CLI, HTTP service and Argo CD PreSync hook in one image.
# Build: docker build -t rayservice-impact .      Run: docker run --rm -p 8080:8080 rayservice-impact
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY diffing ./diffing
COPY app ./app
# Wheels for the project and every dependency (PyYAML's wheel carries libyaml for the C loader).
RUN pip wheel --no-cache-dir --wheel-dir /wheels '.[server,render,helm]'

FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
RUN useradd --uid 10001 --no-create-home --shell /usr/sbin/nologin rayservice-impact
COPY --from=build /wheels /wheels
# server: the HTTP service and the hook; render/helm: kubectl (with kustomize) and Helm's SDK for
# the webhook's rendering of pull requests.
RUN pip install --no-index --find-links=/wheels 'rayservice-impact[server,render,helm]' && rm -rf /wheels
# Non-root, and nothing is written at run time: the image works with readOnlyRootFilesystem.
USER 10001:10001
EXPOSE 8080
ENTRYPOINT ["rayservice-impact"]
CMD ["serve", "--host", "0.0.0.0", "--port", "8080"]

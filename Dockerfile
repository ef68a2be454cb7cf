# rayservice-impact: CLI, HTTP service and Argo CD PreSync hook in one image.
#
# Build it from a clone of this repository, under the name deploy/ runs (deploy/base and
# deploy/argocd both say `image: rayservice-impact:0.1.0`, the version in pyproject.toml):
#   docker build -t rayservice-impact:0.1.0 .
#   docker run --rm -p 8080:8080 rayservice-impact:0.1.0          # the HTTP service
#   docker run --rm rayservice-impact:0.1.0 --version
# A cluster pulls it from a registry: tag and push it there (docker tag / docker push) and give
# deploy/ that name with an overlay's `images:` entry; a kind cluster takes it directly
# (`kind load docker-image rayservice-impact:0.1.0`). docs/argocd.md ("Ten minutes to a held sync")
# goes through it.
ARG PYTHON_IMAGE=python:3.11-slim

FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY diffing ./diffing
COPY app ./app
# One virtualenv with the project and its extras (server: the HTTP service, the webhook and the
# hook; render and helm: kubectl with kustomize, and Helm's SDK, to render pull requests). Only the
# virtualenv goes to the final image: no wheels, no pip cache, no pip. Two more savings:
# helm-python-sdk's wheel holds its library three times (wheels have no symlinks), and
# kubernetes.aio (the asyncio client, ~70 MB) is imported by nothing here.
RUN python -m venv /opt/rayservice-impact \
 && /opt/rayservice-impact/bin/pip install '.[server,render,helm]' \
 && /opt/rayservice-impact/bin/python -m pip uninstall -y -q pip setuptools \
 && rm -rf /opt/rayservice-impact/lib/python3*/site-packages/kubernetes/aio \
 && for lib in /opt/rayservice-impact/lib/python3*/site-packages/helm_python/lib; do \
      [ -d "$lib" ] || continue; \
      full=$(ls "$lib"/libhelm_c.so.*.*.* | head -n 1); \
      for f in "$lib"/libhelm_c.so "$lib"/libhelm_c.so.[0-9]; do \
        if [ -f "$f" ] && [ ! -L "$f" ] && cmp -s "$f" "$full"; then ln -sf "$(basename "$full")" "$f"; fi; \
      done; \
    done \
 && /opt/rayservice-impact/bin/rayservice-impact --version

FROM ${PYTHON_IMAGE}
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PATH=/opt/rayservice-impact/bin:$PATH
# The user deploy/ runs as (runAsUser/runAsGroup 10001), with a passwd entry for the tools that
# look one up.
RUN groupadd --gid 10001 rayservice-impact \
 && useradd --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin rayservice-impact
COPY --from=build /opt/rayservice-impact /opt/rayservice-impact
# Non-root, and nothing is written at run time: the image works with readOnlyRootFilesystem
# (rendering unpacks pull requests under /tmp: deploy/ mounts an emptyDir there).
USER 10001:10001
EXPOSE 8080
ENTRYPOINT ["rayservice-impact"]
CMD ["serve", "--host", "0.0.0.0", "--port", "8080"]

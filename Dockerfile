# Grafana OSS with Quiver installed from this repository.
#   docker compose up --build     (see docker-compose.yaml), then open http://localhost:3000
#
# Stage 1 builds the frontend and stage 2 the backend with the commands CI runs; the last stage
# copies dist/ into the plugin directory of the official Grafana image (grafana/grafana; the
# grafana-oss name is no longer updated).

ARG GRAFANA_VERSION=13.2.3

FROM node:22-bookworm-slim AS frontend
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY .config/ .config/
COPY tsconfig.json plugin.json LICENSE CHANGELOG.md ./
COPY src/ src/
RUN npm run build

FROM golang:1.26-bookworm AS backend
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# The SDK's build targets (they also write the build manifest), for both Linux architectures so
# that the image works on amd64 and arm64 hosts.
RUN go tool mage -v build:linux build:linuxARM64 \
 && test -x dist/gpx_quiver_linux_amd64 && test -x dist/gpx_quiver_linux_arm64

# The demo's Flight SQL server (the flightsql service of docker-compose.yaml): DuckDB with host
# metrics that keep arriving (tests/engine/demoserver). cgo and DuckDB's library, unlike the plugin.
FROM golang:1.26-bookworm AS demoserver-build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=1 go build -tags duckdb,duckdb_arrow -o /demoserver ./tests/engine/demoserver

FROM debian:bookworm-slim AS flightsql-demo
COPY --from=demoserver-build /demoserver /usr/local/bin/demoserver
EXPOSE 31337
ENTRYPOINT ["/usr/local/bin/demoserver", "-listen", "0.0.0.0:31337"]

FROM grafana/grafana:${GRAFANA_VERSION}
ENV GF_PLUGINS_ALLOW_LOADING_UNSIGNED_PLUGINS=quiver-arrow-datasource
COPY --from=frontend /src/dist/ /var/lib/grafana/plugins/quiver-arrow-datasource/
COPY --from=backend /src/dist/gpx_quiver_linux_* /src/dist/go_plugin_build_manifest /var/lib/grafana/plugins/quiver-arrow-datasource/
COPY provisioning/ /etc/grafana/provisioning/

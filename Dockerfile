# Grafana OSS with Quiver installed from this repository.
#   docker compose up --build     (see docker-compose.yaml), then open http://localhost:3000
#
# Stage 1 builds the frontend and stage 2 the backend with the commands CI runs; the last stage
# copies dist/ into the plugin directory of the official Grafana OSS image.

ARG GRAFANA_VERSION=12.3.0

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
# The mage target of grafana-plugin-sdk-go when the Magefile is present (it also writes the build
# manifest); otherwise the same `go build` that target runs.
RUN if [ -f Magefile.go ]; then \
      go tool mage -v build:linux; \
    else \
      CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -tags arrow_json_stdlib \
        -ldflags '-w -s -extldflags "-static"' -o dist/gpx_quiver_linux_amd64 ./pkg; \
    fi \
 && test -x dist/gpx_quiver_linux_amd64

FROM grafana/grafana-oss:${GRAFANA_VERSION}
ENV GF_PLUGINS_ALLOW_LOADING_UNSIGNED_PLUGINS=quiver-arrow-datasource
COPY --from=frontend /src/dist/ /var/lib/grafana/plugins/quiver-arrow-datasource/
COPY --from=backend /src/dist/gpx_quiver_linux_amd64 /var/lib/grafana/plugins/quiver-arrow-datasource/
COPY provisioning/ /etc/grafana/provisioning/

# fsguard as a static binary in an image: for the DaemonSet (privileged,
# it mounts the view on the node) and for copying the client into an
# agent image (FROM ... COPY --from=fsguard /fsguard /usr/local/bin/).
#   docker build --build-arg VERSION=$(scripts/version.sh) -t fsguard .
# The binary is static (CGO_ENABLED=0: the SQLite driver is pure Go), so
# it runs in any image, musl or distroless included.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# VERSION is stamped as scripts/release.sh stamps it; without it the binary
# says what the toolchain recorded (internal/concept/version).
ARG VERSION=
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w${VERSION:+ -X github.com/fsguard/fsguard/internal/concept/version.stamped=$VERSION}" -o /fsguard ./cmd/fsguard

FROM gcr.io/distroless/static-debian12
COPY --from=build /fsguard /fsguard
ENTRYPOINT ["/fsguard"]

# fsguard as a static binary in an image: for the DaemonSet (privileged,
# it mounts the view on the node) and for copying the client into an
# agent image (FROM ... COPY --from=fsguard /fsguard /usr/local/bin/).
#   docker build -t fsguard .
# The binary is static (CGO_ENABLED=0: the SQLite driver is pure Go), so
# it runs in any image, musl or distroless included.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o /fsguard ./cmd/fsguard

FROM gcr.io/distroless/static-debian12
COPY --from=build /fsguard /fsguard
ENTRYPOINT ["/fsguard"]

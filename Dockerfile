# wasq's image, for those who build with a container daemon (Docker, BuildKit, podman):
#   docker build --build-arg WASQ_COMMIT=$(git rev-parse --short=12 HEAD) -t wasq:0.1.0 .
# Without a daemon, dist/build-image makes the same image (same user, entrypoint and labels,
# the same C libraries) from the same `dist` profile.

FROM docker.io/library/rust:1.95-bookworm AS build
ARG WASQ_COMMIT=unknown
WORKDIR /src
COPY . .
RUN rustup target add wasm32-wasip2
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    WASQ_COMMIT=$WASQ_COMMIT cargo build --profile dist --locked --bin wasq \
    && install -D -m 755 target/dist/wasq /out/wasq \
    && target/dist/wasq plugin build \
    && for p in ordering preemption flavors placement; do \
         install -D -m 644 target/plugins/kueue-default-$p.wasm /out/policies/kueue-default-$p.wasm; \
       done

# glibc, libgcc and libm, a nonroot user (65532), nothing else: no shell, no package manager.
FROM gcr.io/distroless/cc-debian12:nonroot
ARG WASQ_COMMIT=unknown
COPY --from=build /out/wasq /usr/local/bin/wasq
# Kueue's decisions as plugins, for QueuePolicy `path` sources (deploy/policies).
COPY --from=build /out/policies/ /usr/lib/wasq/policies/
USER 65532:65532
WORKDIR /
ENTRYPOINT ["/usr/local/bin/wasq"]
LABEL org.opencontainers.image.title=wasq \
      org.opencontainers.image.version=0.1.0 \
      org.opencontainers.image.revision=$WASQ_COMMIT \
      org.opencontainers.image.licenses=Apache-2.0 \
      dev.wasq.wit-package=wasq:policy@1.1.0 \
      dev.wasq.kueue-api=kueue.x-k8s.io/v1beta2

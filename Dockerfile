# kcoord container image: built on Debian bookworm, run on bookworm-slim as an unprivileged user.
#
#   docker build -t kcoord .
#   docker run -p 9092:9092 -p 9404:9404 -v kcoord-data:/var/lib/kcoord \
#       -e KCOORD_ADVERTISED_LISTENERS=localhost:9092 -e KCOORD_TOPICS=orders:3 kcoord
#
# Every setting of conf/kcoord.conf can be given as KCOORD_<KEY> (upper case, dots as
# underscores); the environment wins over the file baked in at /etc/kcoord/kcoord.conf.
# Clients must be able to reach the advertised address: with the wildcard listener below and no
# KCOORD_ADVERTISED_LISTENERS, kcoord advertises the container's host name. Arguments after the
# image name go to kcoord (`docker run --rm kcoord --print-config` shows the effective settings).
# kcoord runs as uid/gid 10001: a named volume on /var/lib/kcoord gets that owner by itself, a
# bind-mounted host directory must be writable by it.
#
# The health check asks the metrics listener (KCOORD_METRICS_LISTENER) for /healthz with bash's
# /dev/tcp, so the runtime image needs no HTTP client. kcoord exits 0 on SIGTERM; the exec form
# of ENTRYPOINT makes it PID 1, so `docker stop` reaches it directly (it handles SIGTERM and
# SIGINT itself and starts no child processes, so it needs no init).
# In a cluster (docs/examples/cluster/docker-compose.yml), each container gets KCOORD_NODE_ID,
# KCOORD_CLUSTER_VOTERS (raft on port 9193 by convention) and KCOORD_CLUSTER_BROKERS; raft's
# state is in /var/lib/kcoord/raft, on the volume.
# tests/docker/docker_smoke.py builds this image with podman and checks it end to end
# (`make compat`).

FROM debian:bookworm-slim AS build
# libraft-dev 0.22 (cowsql's raft) is in bookworm-backports only; scripts/apt-backports adds that
# suite from the image's own APT sources (the same mirror and key).
COPY scripts/apt-backports /tmp/apt-backports
RUN /tmp/apt-backports \
    && suite="$(. /etc/os-release && echo "$VERSION_CODENAME")-backports" \
    && apt-get update \
    && apt-get install -y --no-install-recommends gcc g++ libc6-dev make pkg-config \
        libuv1-dev libzstd-dev libre2-dev libssl-dev \
    && apt-get install -y --no-install-recommends -t "$suite" libraft-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Makefile ./
COPY src ./src
RUN make -j"$(nproc)" BUILD=/tmp/build /tmp/build/kcoord \
    && install -D -s -m 0755 /tmp/build/kcoord /out/kcoord && rm -rf /tmp/build

FROM debian:bookworm-slim
# libraft0 is libraft 0.22's shared library, from bookworm-backports as in the build stage; the
# backports entry stays, so that apt-get upgrade in a derived image keeps it current.
COPY scripts/apt-backports /tmp/apt-backports
RUN /tmp/apt-backports && rm /tmp/apt-backports \
    && suite="$(. /etc/os-release && echo "$VERSION_CODENAME")-backports" \
    && apt-get update \
    && apt-get install -y --no-install-recommends libuv1 libzstd1 libre2-9 libssl3 \
    && apt-get install -y --no-install-recommends -t "$suite" libraft0 \
    && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/cache/apt/archives/*.deb \
    && groupadd --gid 10001 kcoord \
    && useradd --uid 10001 --gid kcoord --home-dir /var/lib/kcoord \
        --no-create-home --shell /usr/sbin/nologin kcoord \
    && install -d -o kcoord -g kcoord -m 0750 /var/lib/kcoord
COPY --from=build /out/kcoord /usr/local/bin/kcoord
COPY conf/kcoord.conf /etc/kcoord/kcoord.conf
ENV KCOORD_LISTENERS=0.0.0.0:9092 \
    KCOORD_DATA_DIR=/var/lib/kcoord \
    KCOORD_METRICS_LISTENER=0.0.0.0:9404
USER 10001:10001
WORKDIR /var/lib/kcoord
VOLUME /var/lib/kcoord
EXPOSE 9092 9193 9404
STOPSIGNAL SIGTERM
# The port (and host, unless a wildcard) come from KCOORD_METRICS_LISTENER, so overriding it
# keeps the check working.
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
    CMD ["/bin/bash", "-c", "l=${KCOORD_METRICS_LISTENER:-127.0.0.1:9404}; h=${l%:*}; h=${h#[}; h=${h%]}; case $h in ''|0.0.0.0|::) h=127.0.0.1;; esac; exec 3<>/dev/tcp/$h/${l##*:} && printf 'GET /healthz HTTP/1.0\\r\\n\\r\\n' >&3 && read -r -t 2 s <&3 && [[ $s == *' 200 '* ]]"]
ENTRYPOINT ["/usr/local/bin/kcoord", "-c", "/etc/kcoord/kcoord.conf"]

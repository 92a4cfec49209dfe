# kcoord container image: build on Debian bookworm, run on bookworm-slim as an unprivileged user.
FROM debian:bookworm-slim AS build
RUN apt-get update && apt-get install -y --no-install-recommends \
        build-essential pkg-config python3 libuv1-dev libzstd-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN make clean && make all

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends libuv1 libzstd1 \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --home-dir /var/lib/kcoord --shell /usr/sbin/nologin kcoord \
    && mkdir -p /var/lib/kcoord && chown kcoord:kcoord /var/lib/kcoord
COPY --from=build /src/build/kcoord /usr/local/bin/kcoord
COPY conf/kcoord.conf /etc/kcoord/kcoord.conf
USER kcoord
VOLUME /var/lib/kcoord
EXPOSE 9092
ENV KCOORD_LISTENERS=0.0.0.0:9092 KCOORD_DATA_DIR=/var/lib/kcoord
ENTRYPOINT ["/usr/local/bin/kcoord", "-c", "/etc/kcoord/kcoord.conf"]

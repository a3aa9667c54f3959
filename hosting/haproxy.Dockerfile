# HAProxy from Debian's archive, with hosting/haproxy.cfg: the load balancer of hosting/compose.yaml.
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${BASE_IMAGE}
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends haproxy \
    && rm -rf /var/lib/apt/lists/*
COPY hosting/haproxy.cfg /etc/haproxy/haproxy.cfg
EXPOSE 80
CMD ["haproxy", "-W", "-db", "-f", "/etc/haproxy/haproxy.cfg"]

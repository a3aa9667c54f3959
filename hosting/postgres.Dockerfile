# PostgreSQL 15 from Debian's archive: the lab store of hosting/compose.yaml (every lab, its models and runs).
# The cluster is made on the volume at the first start (hosting/postgres-entrypoint.sh): SCRAM passwords only,
# the database seqviz and the app's role seqviz_app. Passwords: hosting/.env (docs/hosting.md, "A lecture hall").
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${BASE_IMAGE}
# postgresql-common first, told to make no cluster of its own when postgresql-15 installs
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql-common \
    && sed -ri 's/^#?\s*create_main_cluster\s*=.*$/create_main_cluster = false/' \
        /etc/postgresql-common/createcluster.conf \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql-15 \
    && rm -rf /var/lib/apt/lists/*
ENV PATH=/usr/lib/postgresql/15/bin:$PATH \
    PGDATA=/var/lib/postgresql/data
COPY hosting/postgres-entrypoint.sh /usr/local/bin/seqviz-postgres
RUN chmod 0755 /usr/local/bin/seqviz-postgres
VOLUME /var/lib/postgresql/data
EXPOSE 5432
# postgres's fast shutdown: open transactions are rolled back, everything committed is on disk
STOPSIGNAL SIGINT
ENTRYPOINT ["/usr/local/bin/seqviz-postgres"]

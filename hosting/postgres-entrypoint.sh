#!/bin/sh
# The lecture hall's PostgreSQL (hosting/postgres.Dockerfile, hosting/compose.yaml). On the first start (an empty
# volume at $PGDATA) it makes the cluster:
#   - passwords only, SCRAM-SHA-256: in the container any role with its password (psql, pg_dump); from the
#     network only seqviz_app, to the database seqviz;
#   - the superuser postgres, password SEQVIZ_DB_ADMIN_PASSWORD;
#   - the database seqviz (owned by postgres) and its schema seqviz (owned by postgres);
#   - the app's role seqviz_app, password SEQVIZ_DB_APP_PASSWORD: it may connect to seqviz and use and create
#     tables in the schema seqviz (its search_path), and nothing else: no superuser, no new databases or roles,
#     no other database (PUBLIC's CONNECT is revoked from all of them), no public schema. CREATE in its schema
#     is the least it needs: the app makes and migrates its own tables (Alembic) at first use, so it owns them.
# Later starts find the cluster and start postgres: the passwords are read on the first start only (docs/hosting.md,
# "A lecture hall": to change one, ALTER ROLE).
set -eu

if [ "$(id -u)" = 0 ]; then
    # root only to hand the volume and the socket's folder to postgres; then this script again, as postgres
    install -d -o postgres -g postgres -m 0700 "$PGDATA"
    install -d -o postgres -g postgres -m 2775 /run/postgresql
    exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi

fail() {
    echo "seqviz-postgres: $*" >&2
    exit 1
}

password() {  # password NAME VALUE: at least 16 characters that need no escaping in a URL
    case "$2" in
        '') fail "$1 is not set: make hosting/.env (docs/hosting.md, \"A lecture hall\")" ;;
        *[!A-Za-z0-9._~-]*) fail "$1 may hold only letters, digits and . _ ~ - (it goes into a URL): openssl rand -hex 32" ;;
    esac
    [ "${#2}" -ge 16 ] || fail "$1 is shorter than 16 characters: openssl rand -hex 32"
}

if [ ! -s "$PGDATA/PG_VERSION" ]; then
    password SEQVIZ_DB_ADMIN_PASSWORD "${SEQVIZ_DB_ADMIN_PASSWORD:-}"
    password SEQVIZ_DB_APP_PASSWORD "${SEQVIZ_DB_APP_PASSWORD:-}"
    echo "seqviz-postgres: first start: making the cluster in $PGDATA"
    pwfile=$(mktemp)
    printf '%s\n' "$SEQVIZ_DB_ADMIN_PASSWORD" > "$pwfile"
    initdb --pgdata="$PGDATA" --username=postgres --pwfile="$pwfile" --auth=scram-sha-256 --encoding=UTF8 \
        --locale=C.UTF-8 > /dev/null
    rm -f "$pwfile"
    cat > "$PGDATA/pg_hba.conf" <<'EOF'
# Passwords only (SCRAM). In the container: any role, with its password. From the network: the app's role, to its
# database (hosting/postgres-entrypoint.sh).
# TYPE  DATABASE  USER        ADDRESS     METHOD
local   all       all                     scram-sha-256
host    seqviz    seqviz_app  0.0.0.0/0   scram-sha-256
host    seqviz    seqviz_app  ::/0        scram-sha-256
EOF
    cat >> "$PGDATA/postgresql.conf" <<'EOF'

# seqviz (hosting/postgres-entrypoint.sh): the compose network reaches this container only
listen_addresses = '*'
password_encryption = 'scram-sha-256'
EOF
    # the roles and grants, on the unix socket only (nothing can connect from the network meanwhile)
    pg_ctl --pgdata="$PGDATA" --options="-c listen_addresses=''" --wait --silent start
    PGPASSWORD=$SEQVIZ_DB_ADMIN_PASSWORD psql --no-psqlrc --quiet --set=ON_ERROR_STOP=1 --username=postgres \
        --dbname=postgres --set=app_password="$SEQVIZ_DB_APP_PASSWORD" <<'EOF'
CREATE ROLE seqviz_app LOGIN PASSWORD :'app_password'
    NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT NOREPLICATION NOBYPASSRLS;
CREATE DATABASE seqviz OWNER postgres ENCODING 'UTF8' TEMPLATE template0;
REVOKE ALL ON DATABASE postgres FROM PUBLIC;
REVOKE ALL ON DATABASE template1 FROM PUBLIC;
REVOKE ALL ON DATABASE seqviz FROM PUBLIC;
GRANT CONNECT ON DATABASE seqviz TO seqviz_app;
ALTER ROLE seqviz_app IN DATABASE seqviz SET search_path = seqviz;
\connect seqviz
REVOKE ALL ON SCHEMA public FROM PUBLIC;
CREATE SCHEMA seqviz AUTHORIZATION postgres;
GRANT USAGE, CREATE ON SCHEMA seqviz TO seqviz_app;
EOF
    pg_ctl --pgdata="$PGDATA" --mode=fast --wait --silent stop
    echo "seqviz-postgres: the database seqviz and the role seqviz_app are made"
fi

unset SEQVIZ_DB_ADMIN_PASSWORD SEQVIZ_DB_APP_PASSWORD
exec postgres -D "$PGDATA" "$@"

#!/bin/sh
# Entrypoint of the rocketmq-broker and rocketmq-controller images (docs/contracts.md, "Images").
#
#   rocketmq-entrypoint.sh <broker|namesrv|controller|proxy> [extra arguments for the main class]
#   ROCKETMQ_ROLE=<role> rocketmq-entrypoint.sh
#
# 1. Copies ${ROCKETMQ_CONFIG_DIR}/${POD_NAME}.conf (the ConfigMap, read-only) to
#    ${ROCKETMQ_DATA_DIR}/conf/${POD_NAME}.conf (the volume, writable: UPDATE_BROKER_CONFIG rewrites the -c file).
#    Proxies (a Deployment: every pod alike) copy ${ROCKETMQ_CONFIG_DIR}/rmq-proxy.json instead, and run in
#    cluster mode with -pc <copied file> -pm cluster.
# 2. Brokers: appends brokerIP1=${POD_IP} and brokerIP2=${POD_IP} unless the file already sets them.
# 3. Appends every *.properties file of ${ROCKETMQ_SECRET_CONFIG_DIR} (a Secret volume; absent: nothing) to the
#    copy, made mode 0600 first; proxies merge every *.json object of it into their rmq-proxy.json instead.
# 4. Writes ${ROCKETMQ_DATA_DIR}/conf/dns.security: the JVM's DNS cache, 1 s for an answer and none for a
#    failure (JDK 17 keeps an answer 30 s and a failure 10 s). On Kubernetes a restarted pod keeps its DNS name and
#    gets a new IP: with the JDK's cache a broker kept connecting to a restarted controller's old IP for up to
#    30 s, its heartbeats never reached the new leader, and the leader deposed a live master (docs/chaos.md,
#    finding 10). Lookups happen per new connection only, so a short cache costs nothing in steady state.
#    ROCKETMQ_DNS_CACHE_SECONDS and ROCKETMQ_DNS_NEGATIVE_CACHE_SECONDS override the two.
# 5. Execs java with -Djava.security.properties=<that file>, ${JAVA_OPTS}, user.home on the data volume (logs,
#    default stores), rocketmq.home.dir, the role's logback configuration, the classpath conf/ + lib/*, the role's
#    main class and -c <copied file>.
#
# Environment: POD_NAME (default: the host name, which is the pod name in a StatefulSet), POD_IP (brokers),
# JAVA_OPTS, ROCKETMQ_HOME (/opt/rocketmq), ROCKETMQ_CONFIG_DIR (/etc/rocketmq), ROCKETMQ_DATA_DIR (/data),
# ROCKETMQ_SECRET_CONFIG_DIR (/etc/rocketmq-secret), JAVA (java). Exit codes: 64 usage (unknown or missing
# role), 66 config file missing, 78 environment incomplete.
set -eu

PROG=rocketmq-entrypoint

die() {
    code=$1
    shift
    printf '%s: error: %s\n' "$PROG" "$*" >&2
    exit "$code"
}

role=${1:-${ROCKETMQ_ROLE:-}}
if [ "$#" -gt 0 ]; then
    shift
fi

case "$role" in
    broker) main=org.apache.rocketmq.broker.BrokerStartup ;;
    namesrv) main=org.apache.rocketmq.namesrv.NamesrvStartup ;;
    controller) main=org.apache.rocketmq.controller.ControllerStartup ;;
    proxy) main=org.apache.rocketmq.proxy.ProxyStartup ;;
    '') die 64 "no role given; usage: $0 <broker|namesrv|controller|proxy> (or set ROCKETMQ_ROLE)" ;;
    *) die 64 "unknown role '$role'; expected one of: broker, namesrv, controller, proxy" ;;
esac

ROCKETMQ_HOME=${ROCKETMQ_HOME:-/opt/rocketmq}
export ROCKETMQ_HOME
config_dir=${ROCKETMQ_CONFIG_DIR:-/etc/rocketmq}
data_dir=${ROCKETMQ_DATA_DIR:-/data}
pod_name=${POD_NAME:-$(hostname)}
[ -n "$pod_name" ] || die 78 "POD_NAME is empty and the host name is unknown"

config_name="$pod_name.conf"
if [ "$role" = proxy ]; then
    config_name=rmq-proxy.json
fi
source_file="$config_dir/$config_name"
if [ ! -f "$source_file" ] || [ ! -r "$source_file" ]; then
    if [ -d "$config_dir" ]; then
        present=
        for f in "$config_dir"/*; do
            if [ -e "$f" ]; then
                present="$present ${f##*/}"
            fi
        done
        die 66 "config file $source_file not found (POD_NAME=$pod_name); $config_dir contains:${present:- nothing}"
    fi
    die 66 "config file $source_file not found (POD_NAME=$pod_name); directory $config_dir does not exist"
fi

conf_dir="$data_dir/conf"
config_file="$conf_dir/$config_name"
mkdir -p "$conf_dir" || die 78 "cannot create $conf_dir (is ROCKETMQ_DATA_DIR=$data_dir writable?)"
cp "$source_file" "$config_file.tmp"
mv -f "$config_file.tmp" "$config_file"

# True when the properties file sets $1 (key=value, key: value or key value; leading blanks allowed).
has_key() {
    grep -Eq "^[[:space:]]*$1([[:space:]]*[=:]|[[:space:]])" "$config_file"
}

if [ "$role" = broker ]; then
    for key in brokerIP1 brokerIP2; do
        if ! has_key "$key"; then
            [ -n "${POD_IP:-}" ] || die 78 "POD_IP is not set and $source_file does not set $key"
            # Keep the last line intact when the file does not end with a newline.
            if [ -s "$config_file" ] && [ -n "$(tail -c 1 "$config_file")" ]; then
                echo >>"$config_file"
            fi
            printf '%s=%s\n' "$key" "$POD_IP" >>"$config_file"
        fi
    done
fi

# Secret settings (a Secret volume, e.g. a group's admin credentials): appended to the copy only, which only this
# process's user can read; the ConfigMap never holds them.
secret_dir=${ROCKETMQ_SECRET_CONFIG_DIR:-/etc/rocketmq-secret}
if [ -d "$secret_dir" ] && [ "$role" != proxy ]; then
    for f in "$secret_dir"/*.properties; do
        [ -f "$f" ] || continue
        [ -r "$f" ] || die 78 "secret config $f is not readable by uid $(id -u)"
        chmod 600 "$config_file"
        if [ -s "$config_file" ] && [ -n "$(tail -c 1 "$config_file")" ]; then
            echo >>"$config_file"
        fi
        cat "$f" >>"$config_file"
    done
fi
# Proxies: every *.json of the Secret volume is one JSON object whose members join rmq-proxy.json's (the operator
# renders both: the config's closing brace on its own last line, the secret's object on one line).
if [ -d "$secret_dir" ] && [ "$role" = proxy ]; then
    for f in "$secret_dir"/*.json; do
        [ -f "$f" ] || continue
        [ -r "$f" ] || die 78 "secret config $f is not readable by uid $(id -u)"
        members=$(sed -e '1s/^[[:space:]]*{//' -e '$s/}[[:space:]]*$//' "$f")
        case "$members" in
            *[![:space:]]*) ;;
            *) continue ;;
        esac
        chmod 600 "$config_file"
        sed -e '$s/}[[:space:]]*$//' "$config_file" >"$config_file.tmp"
        printf ',%s}\n' "$members" >>"$config_file.tmp"
        chmod 600 "$config_file.tmp"
        mv -f "$config_file.tmp" "$config_file"
    done
fi

# The JVM's DNS cache (step 4 above): java.security's own keys, so a file (security.overridePropertiesFile is true
# in the JDK's java.security); JAVA_OPTS comes after it, so a user's own -Djava.security.properties still wins.
dns_ttl=${ROCKETMQ_DNS_CACHE_SECONDS:-1}
dns_negative_ttl=${ROCKETMQ_DNS_NEGATIVE_CACHE_SECONDS:-0}
for value in "$dns_ttl" "$dns_negative_ttl"; do
    case "$value" in
        '' | *[!0-9]*) die 78 "DNS cache seconds must be a whole number of seconds (0 or more), got '$value'" ;;
    esac
done
dns_security="$conf_dir/dns.security"
printf 'networkaddress.cache.ttl=%s\nnetworkaddress.cache.negative.ttl=%s\n' "$dns_ttl" "$dns_negative_ttl" \
    >"$dns_security.tmp"
mv -f "$dns_security.tmp" "$dns_security"

# Relative paths (hs_err files, heap dumps) land on the data volume; the root file system may be read-only.
cd "$data_dir"

printf '%s: starting %s (%s) with %s\n' "$PROG" "$role" "$main" "$config_file" >&2

# The main class's arguments: its config file first, then the caller's.
if [ "$role" = proxy ]; then
    set -- -pc "$config_file" -pm cluster "$@"
else
    set -- -c "$config_file" "$@"
fi

# JAVA_OPTS is a rendered, space-separated flag list: split it on blanks, never glob it.
set -f
# shellcheck disable=SC2086
exec "${JAVA:-java}" "-Djava.security.properties=$dns_security" ${JAVA_OPTS:-} \
    "-Duser.home=$data_dir" \
    "-Drocketmq.home.dir=$ROCKETMQ_HOME" \
    "-Drmq.logback.configurationFile=$ROCKETMQ_HOME/conf/rmq.$role.logback.xml" \
    -cp "$ROCKETMQ_HOME/conf:$ROCKETMQ_HOME/lib/*" \
    "$main" "$@"

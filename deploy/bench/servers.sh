# deploy/bench/servers.sh - sourced by memory.sh and hitratio.sh: start one
# fresh brim-node --standalone or memcached -t 1 on loopback, wait until it
# listens, and stop it by PID. Needs $bin (brim's binaries); as root,
# memcached runs with -u root. Sets $pid to the running server, or "".
pid=
server_user_opt=()
[ "$(id -u)" = 0 ] && server_user_opt=(-u root)

server_start() {   # target port limit_mib: start it, wait for its port
    if [ "$1" = brim ]; then
        "$bin/brim-node" --standalone --listen "127.0.0.1:$2" \
            --memory-mb "$3" --log-level warn & pid=$!
    else
        memcached "${server_user_opt[@]}" -t 1 -m "$3" -p "$2" -U 0 \
            -l 127.0.0.1 & pid=$!
    fi
    for _ in $(seq 1 100); do
        (exec 3<>"/dev/tcp/127.0.0.1/$2") 2>/dev/null && return 0
        sleep 0.1
    done
    echo "$0: $1 does not listen on port $2" >&2
    return 1
}

server_stop() {   # stop the server by PID and wait, so its port is free
    if [ -n "$pid" ]; then
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    fi
    pid=
}

# Helpers the benchmark scripts share; sourced, not run.

# Seconds in a wrk-style duration ("10s", "1m"; 500ms is not accepted by wrk either), for timeouts.
seconds() { case $1 in *m) echo $(( ${1%m} * 60 ));; *s) echo "${1%s}";; *) echo "$1";; esac; }

# With PIN=1 on a machine of 2 cores or more: the servers on CPU 0 and the load generator on CPU 1.
# Sets the arrays cpu_server and cpu_client (empty when not pinned) to put before their commands.
pin_cpus() {
    cpu_server=() cpu_client=()
    if [ "${PIN:-1}" = 1 ] && command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then
        cpu_server=(taskset -c 0) cpu_client=(taskset -c 1)
    fi
}

# The median of the numbers on standard input, one a line; "n/a" when there are none.
median_of() {
    sort -g | awk '{ v[NR] = $1 } END {
        if (NR == 0) print "n/a"; else if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

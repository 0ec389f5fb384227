-- wrk script for scripts/bench-durability.sh (WORKLOADS=keyed) and scripts/bench-cluster.sh
-- (WORKLOAD=keyed): the increment, each request with an Idempotency-Key of its own, as a client
-- that retries safely sends it (with a data directory, the key's answer is written in the event's
-- journal record; in a cluster, the key is claimed in Redis first). A script argument
-- (`wrk ... -- PREFIX`) begins every key, so that several wrk at once never share one; without it,
-- a random number does.
wrk.method = "POST"
wrk.path = "/events"
wrk.body = '{"type":"increment","path":"/counter","by":1}'
local threads = 0
local sent = 0
local prefix

function setup(thread)
    threads = threads + 1
    thread:set("index", threads)
end

function init(args)
    prefix = (args[1] or tostring(math.random(1, 1e9))) .. "-" .. tostring(index or 0)
end

function request()
    sent = sent + 1
    return wrk.format(nil, nil, {["Content-Type"] = "application/json", ["Idempotency-Key"] = prefix .. "-" .. sent})
end

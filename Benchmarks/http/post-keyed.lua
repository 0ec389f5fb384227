-- wrk script for scripts/bench-durability.sh (WORKLOADS=keyed): the increment, each request with an
-- Idempotency-Key of its own, as a client that retries safely sends it (with a data directory,
-- the key's answer is written in the event's journal record).
wrk.method = "POST"
wrk.path = "/events"
wrk.body = '{"type":"increment","path":"/counter","by":1}'
local sent = 0
local prefix = tostring(math.random(1, 1e9))
request = function()
    sent = sent + 1
    return wrk.format(nil, nil, {["Content-Type"] = "application/json", ["Idempotency-Key"] = prefix .. "-" .. sent})
end

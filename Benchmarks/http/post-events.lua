-- wrk script for scripts/bench-http.sh: every request is the same increment event,
-- POST /events with a JSON body, as a client of reactord sends it.
wrk.method = "POST"
wrk.path = "/events"
wrk.body = '{"type":"increment","path":"/counter","by":1}'
wrk.headers["Content-Type"] = "application/json"

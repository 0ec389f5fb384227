-- wrk script for scripts/bench-durability.sh (WORKLOADS=array): requests of five events each, a
-- POSTed array applied all or nothing (with a data directory, kept all or none across a crash).
wrk.method = "POST"
wrk.path = "/events"
wrk.body = '[{"type":"increment","path":"/a"},{"type":"set","path":"/b","value":"x"},{"type":"increment","path":"/c","by":2},'
    .. '{"type":"set","path":"/d","value":{"k":1}},{"type":"increment","path":"/a"}]'
wrk.headers["Content-Type"] = "application/json"

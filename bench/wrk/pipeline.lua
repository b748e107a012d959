-- wrk script: each write carries DEPTH pipelined requests (default 16);
-- wrk counts every response, so requests/sec is per request, not per batch.
--   wrk -t1 -c64 -d5s -s bench/wrk/pipeline.lua http://127.0.0.1:8080/ -- 16
init = function(args)
    local depth = tonumber(args[1]) or 16
    local r = {}
    for i = 1, depth do
        r[i] = wrk.format(nil, wrk.path)
    end
    req = table.concat(r)
end

request = function()
    return req
end

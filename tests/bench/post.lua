-- post.lua - wrk script for `make bench`: POSTs an Alertmanager webhook (a real three-alert
-- payload) with the bearer token, counts non-2xx answers per thread and prints one
-- machine-readable line.  The workload (BENCH_MODE):
--   new     every request has its own startsAt: each is a new firing episode (default);
--   repeat  the payload as it is, again and again (Alertmanager's repeat_interval, an HA
--           twin, a retry): after the first, every request is a repeat;
--   mix     9 requests in 10 are that repeat, 1 in 10 brings new alerts (new fingerprints:
--           alerts that start firing, while the repeated ones go on).
-- Env: BENCH_PAYLOAD (path of the JSON payload), BENCH_TOKEN (bearer token), BENCH_MODE.

local threads = {}
local counter = 0

function setup(thread)
	thread:set("id", #threads)
	table.insert(threads, thread)
end

function init(args)
	local f = assert(io.open(os.getenv("BENCH_PAYLOAD"), "rb"))
	template = f:read("*a")
	f:close()
	non2xx = 0
	ok = 0
	-- 2030-01-01T00:00:00Z, then one millisecond per request, threads interleaved.
	base_ms = 1893456000000
	mode = os.getenv("BENCH_MODE") or "new"
	assert(mode == "new" or mode == "repeat" or mode == "mix", "BENCH_MODE: new, repeat or mix")
	wrk.method = "POST"
	wrk.headers["Authorization"] = "Bearer " .. os.getenv("BENCH_TOKEN")
	wrk.headers["Content-Type"] = "application/json"
end

local function starts_at(ms)
	local s = math.floor(ms / 1000)
	return os.date("!%Y-%m-%dT%H:%M:%S", s) .. string.format(".%03dZ", ms % 1000)
end

function request()
	counter = counter + 1
	if mode == "repeat" or (mode == "mix" and counter % 10 ~= 0) then
		return wrk.format(nil, nil, nil, template)
	end
	local n = counter * 64 + id
	local ts = starts_at(base_ms + n)
	local body = template:gsub('"startsAt": *"[^"]*"', '"startsAt": "' .. ts .. '"')
	if mode == "mix" then
		local k = 0
		body = body:gsub('"fingerprint": *"[^"]*"', function()
			k = k + 1
			return string.format('"fingerprint": "%012x%04x"', n, k)
		end)
	end
	return wrk.format(nil, nil, nil, body)
end

function response(status, headers, body)
	if status >= 200 and status < 300 then
		ok = ok + 1
	else
		non2xx = non2xx + 1
	end
end

function done(summary, latency, requests)
	local bad, good = 0, 0
	for _, t in ipairs(threads) do
		bad = bad + t:get("non2xx")
		good = good + t:get("ok")
	end
	local e = summary.errors
	io.write(string.format("BENCH requests=%d ok=%d non2xx=%d rps=%.1f p50_us=%d p99_us=%d " ..
		"connect_errors=%d read_errors=%d write_errors=%d timeouts=%d\n",
		summary.requests, good, bad, summary.requests / (summary.duration / 1e6),
		latency:percentile(50), latency:percentile(99), e.connect, e.read, e.write,
		e.timeout))
end

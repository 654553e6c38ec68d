-- wrk script: POST /leaderboard/search with rotating query bodies.
-- usage: wrk -t2 -c16 -d10s --latency -s bench/search.lua http://127.0.0.1:PORT/leaderboard/search \
--          -- BODIES_FILE [API_KEY]
-- BODIES_FILE holds one complete JSON request body per line (bench/load.py writes it).

local next_tid = 0
function setup(thread)
  next_tid = next_tid + 1
  thread:set("tid", next_tid)
end

local bodies = {}
local counter = 0

function init(args)
  local path = args[1]
  if path == nil then error("search.lua: give the bodies file after --") end
  for line in io.lines(path) do
    if #line > 0 then bodies[#bodies + 1] = line end
  end
  if #bodies == 0 then error("search.lua: no bodies in " .. path) end
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
  if args[2] ~= nil and #args[2] > 0 then
    wrk.headers["Authorization"] = "Bearer " .. args[2]
  end
  -- each thread starts at a different place in the rotation
  counter = ((tonumber(tid) or 1) - 1) * 7919
end

function request()
  counter = counter + 1
  return wrk.format(nil, nil, nil, bodies[(counter % #bodies) + 1])
end

-- wrk script: POST /leaderboard/add with unique request_ids (so every request stores new memories).
-- usage: wrk -t2 -c16 -d5s --latency -s bench/add.lua http://127.0.0.1:PORT/leaderboard/add \
--          -- MESSAGES_FILE RUN_PREFIX USER_ID [API_KEY]
-- MESSAGES_FILE holds one JSON `messages` array per line (bench/load.py writes it); RUN_PREFIX must
-- be unique per run (it starts every request_id), USER_ID is the scope written to.

local next_tid = 0
function setup(thread)
  next_tid = next_tid + 1
  thread:set("tid", next_tid)
end

local msgs = {}
local counter = 0
local prefix, user

function init(args)
  local path = args[1]
  prefix, user = args[2], args[3]
  if path == nil or prefix == nil or user == nil then
    error("add.lua: give MESSAGES_FILE RUN_PREFIX USER_ID after --")
  end
  for line in io.lines(path) do
    if #line > 0 then msgs[#msgs + 1] = line end
  end
  if #msgs == 0 then error("add.lua: no message arrays in " .. path) end
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
  if args[4] ~= nil and #args[4] > 0 then
    wrk.headers["Authorization"] = "Bearer " .. args[4]
  end
  counter = ((tonumber(tid) or 1) - 1) * 7919
end

function request()
  counter = counter + 1
  local t = tostring(tid or 0)
  local body = '{"request_id":"' .. prefix .. ':t' .. t .. ':chunk-' .. counter ..
               '","user_id":"' .. user ..
               '","session_id":"' .. prefix .. ':t' .. t ..
               '","messages":' .. msgs[(counter % #msgs) + 1] .. '}'
  return wrk.format(nil, nil, nil, body)
end

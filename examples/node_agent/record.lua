local n = tonumber(ARGV[1])
local last = tonumber(redis.call('GET', KEYS[1]) or '0')
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
local base = math.max(last, now)
redis.call('SET', KEYS[1], string.format('%d', base + n), 'EX', ARGV[2])
local due = tonumber(clock[1]) + tonumber(clock[2]) / 1000000
for i = 1, n do
  local seq = string.format('%d', base + i)
  local prev = string.format('%d', base + i - 1)
  if i == 1 then prev = string.format('%d', last) end
  local at = 5 + 3 * (i - 1)
  redis.call('HSET', KEYS[2], seq, '{"seq":' .. seq .. ',"prev_seq":' .. prev ..
    ',"task":' .. cjson.encode(ARGV[at]) .. ',"task_id":' .. cjson.encode(ARGV[at + 1]) ..
    ',"recorded_at_us":' .. string.format('%d', now) .. ',"args":' .. ARGV[at + 2] .. '}')
  redis.call('ZADD', KEYS[3], due, seq .. '|' .. ARGV[4])
end
redis.call('EXPIRE', KEYS[2], ARGV[3])
return {string.format('%d', last), string.format('%d', base)}

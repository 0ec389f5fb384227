-- wrk script for scripts/bench-http.sh and scripts/bench-durability.sh: the realistic workload.
-- Every request sets one of 64 players, at the top of a wide document, to an object of some 300
-- bytes (POST /events, a "set" event), as a game or dashboard client of reactord sends it. The
-- bodies are made once, 512 of them (8 per player, with different values), and taken in turn, so
-- that wrk spends no time formatting and every event changes the state.
local players = 64
local variants = 8
local classes = { "ranger", "warrior", "mage", "healer" }
local statuses = { "exploring", "fighting", "trading", "resting" }
local requests = {}

function init(args)
    local headers = { ["Content-Type"] = "application/json" }
    for variant = 0, variants - 1 do
        for player = 0, players - 1 do
            local n = variant * players + player
            local body = string.format(
                '{"type":"set","path":"/player%d","value":{"name":"player-%d","class":"%s",' ..
                '"level":%d,"hp":%d,"mana":%d,"x":%.2f,"y":%.2f,"status":"%s",' ..
                '"guild":"north-watch","inventory":["sword","shield","potion","map","rope"],' ..
                '"stats":{"strength":%d,"agility":%d,"wisdom":%d},"updatedAt":"2026-11-26T10:%02d:%02d.000Z"}}',
                player, player, classes[player % 4 + 1], 1 + player % 40, 50 + n % 50, 20 + n % 80,
                (n * 37) % 1000 / 3, (n * 53) % 1000 / 7, statuses[variant % 4 + 1],
                10 + n % 9, 10 + n % 7, 10 + n % 5, n % 60, (n * 7) % 60)
            requests[#requests + 1] = wrk.format("POST", "/events", headers, body)
        end
    end
end

local next_request = 0

function request()
    next_request = next_request % #requests + 1
    return requests[next_request]
end

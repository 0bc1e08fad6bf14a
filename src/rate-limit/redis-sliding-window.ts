import type { Redis } from 'ioredis';
import { MemorySlidingWindow, type SlidingWindow, type WindowAnswer, type WindowOptions } from './sliding-window.js';

/**
 * The sliding window (./sliding-window.ts) shared by every instance: per key a Redis list
 * of at most `limit` attempt times, newest first, checked and appended by one Lua script
 * (atomic across instances), expiring a window after its newest attempt. Times come from
 * the caller's clock, so instances should keep theirs in step (NTP). While Redis fails,
 * attempts count in this instance's memory, as the request limits do (docs/limits.md).
 */

// KEYS[1]: the attempts. ARGV: now (ms), window (ms), limit. Returns {allowed, retry after (ms)}.
const TAKE_SCRIPT = `local now = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
redis.call('ltrim', KEYS[1], 0, limit - 1)
while true do
  local oldest = redis.call('lindex', KEYS[1], -1)
  if not oldest or tonumber(oldest) > now - window then break end
  redis.call('rpop', KEYS[1])
end
if redis.call('llen', KEYS[1]) < limit then
  redis.call('lpush', KEYS[1], ARGV[1])
  redis.call('pexpire', KEYS[1], window)
  return {1, 0}
end
return {0, tonumber(redis.call('lindex', KEYS[1], -1)) + window - now}`;

const COMMAND = 'inkwellSlidingWindowTake';

type WithTake = Redis & { [COMMAND](key: string, now: number, windowMs: number, limit: number): Promise<[number, number]> };

export class RedisSlidingWindow implements SlidingWindow {
  private readonly client: WithTake;
  private readonly local: MemorySlidingWindow;
  private readonly now: () => number;

  constructor(
    client: Redis,
    private readonly keyPrefix: string,
    private readonly options: WindowOptions,
    private readonly onError: (error: unknown) => void = () => {},
  ) {
    if (!(COMMAND in client)) client.defineCommand(COMMAND, { numberOfKeys: 1, lua: TAKE_SCRIPT });
    this.client = client as WithTake;
    this.now = options.now ?? Date.now;
    this.local = new MemorySlidingWindow({ ...options, now: this.now });
  }

  async take(key: string): Promise<WindowAnswer> {
    if (this.client.status !== 'ready') return this.local.takeNow(key);
    try {
      const [allowed, retryAfterMs] = await this.client[COMMAND](this.keyPrefix + key, this.now(), this.options.windowMs, this.options.limit);
      return { allowed: allowed === 1, retryAfterMs: Number(retryAfterMs) };
    } catch (error) {
      this.onError(error);
      return this.local.takeNow(key);
    }
  }

  async clear(key: string): Promise<void> {
    await Promise.allSettled([this.client.del(this.keyPrefix + key), this.local.clear(key)]);
  }
}

import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOGIN_FAILURE_LIMIT, LOGIN_FAILURE_WINDOW_MS, LoginThrottle } from '../../src/auth/login-throttle.js';
import { ANONYMOUS } from '../../src/domain/caller.js';
import { clientKey } from '../../src/rate-limit/limiter.js';
import { RedisSlidingWindow } from '../../src/rate-limit/redis-sliding-window.js';
import { MemorySlidingWindow, type SlidingWindow, type WindowOptions } from '../../src/rate-limit/sliding-window.js';
import { hasRedisServer, startRedis, type RedisServer } from '../helpers/redis.js';

/**
 * docs/limits.md ("Failed logins"): the sign-in throttle is a sliding window (no fresh allowance at a
 * clock boundary) whose Retry-After is the real wait; IPv6 clients are counted per /64.
 * The windows run on an injected clock, in memory and on a real redis-server.
 */

const WINDOW = LOGIN_FAILURE_WINDOW_MS;
const LIMIT = LOGIN_FAILURE_LIMIT;

let redisServer: RedisServer | undefined;
let redis: Redis | undefined;
beforeAll(async () => {
  if (!hasRedisServer()) return;
  redisServer = await startRedis();
  redis = new Redis(redisServer.url);
  // Ready before the tests: a window whose Redis is not ready counts in memory instead.
  await redis.ping();
});
afterAll(async () => {
  redis?.disconnect();
  await redisServer?.destroy();
});

let prefixes = 0;
const kinds: [string, (options: WindowOptions) => SlidingWindow][] = [
  ['in memory', (options) => new MemorySlidingWindow(options)],
  [
    'in Redis',
    (options) => {
      if (!redis) throw new Error('redis-server is not installed');
      return new RedisSlidingWindow(redis, `unit-${process.pid}-${++prefixes}:`, options, (e) => {
        throw e;
      });
    },
  ],
];

describe.each(kinds)('the sign-in window %s', (_kind, make) => {
  /** A throttle on a clock the test moves. */
  function throttle() {
    const clock = { now: 0 };
    const window = make({ limit: LIMIT, windowMs: WINDOW, now: () => clock.now });
    return { clock, window, login: new LoginThrottle(window, Buffer.alloc(32, 1)) };
  }
  const attempts = async (login: LoginThrottle, n: number) => {
    const allowed: boolean[] = [];
    for (let i = 0; i < n; i++) allowed.push((await login.attempt('victim@example.test')).allowed);
    return allowed;
  };

  it('gives no fresh allowance at a clock boundary: 10 attempts before it and 10 after are 10 in all', async () => {
    const { clock, login } = throttle();
    // One second before a 15-minute boundary of the wall clock (the fixed window's), then one after.
    const boundary = 1_000 * WINDOW;
    clock.now = boundary - 1_000;
    expect(await attempts(login, LIMIT)).toEqual(new Array(LIMIT).fill(true));
    clock.now = boundary + 1_000;
    expect(await attempts(login, LIMIT)).toEqual(new Array(LIMIT).fill(false));
  });

  it("answers the real wait: the oldest counted attempt's end of window, to the second", async () => {
    const { clock, login } = throttle();
    clock.now = 5_000_000;
    await attempts(login, 1);
    clock.now += 600_000; // 10 minutes later, nine more
    await attempts(login, LIMIT - 1);
    clock.now += 1_500;
    const refused = await login.attempt('victim@example.test');
    // The first attempt leaves the window 15 min after it was made: 5 min less 1.5 s from now.
    expect(refused).toEqual({ allowed: false, retryAfterSeconds: Math.ceil((WINDOW - 600_000 - 1_500) / 1000) });
    clock.now += (WINDOW - 600_000 - 1_500) - 1;
    expect((await login.attempt('victim@example.test')).allowed).toBe(false);
    clock.now += 1;
    // Exactly one slot came free; the next waits for the second-oldest (10 minutes).
    expect((await login.attempt('victim@example.test')).allowed).toBe(true);
    expect(await login.attempt('victim@example.test')).toEqual({ allowed: false, retryAfterSeconds: 600 });
  });

  it('does not count refused attempts, and a success clears the count', async () => {
    const { clock, login } = throttle();
    clock.now = 1_000_000;
    await attempts(login, LIMIT);
    clock.now += 60_000;
    expect(await attempts(login, 50)).toEqual(new Array(50).fill(false));
    // Refusals did not push the window on: the first attempts still end it.
    expect((await login.attempt('victim@example.test')).retryAfterSeconds).toBe((WINDOW - 60_000) / 1000);
    await login.succeeded('victim@example.test');
    expect(await attempts(login, LIMIT)).toEqual(new Array(LIMIT).fill(true));
  });

  it('counts concurrent attempts exactly', async () => {
    const { clock, window } = throttle();
    clock.now = 1_000_000;
    const answers = await Promise.all(Array.from({ length: 30 }, () => window.take('k')));
    expect(answers.filter((a) => a.allowed)).toHaveLength(LIMIT);
  });
});

describe('the in-memory sign-in window', () => {
  it('drops keys whose attempts all left the window, and only those', async () => {
    const clock = { now: 0 };
    const window = new MemorySlidingWindow({ limit: 2, windowMs: 1_000, now: () => clock.now });
    await window.take('old');
    clock.now = 600;
    await window.take('recent');
    clock.now = 1_200;
    await window.take('new');
    expect(window.size).toBe(2);
  });
});

describe('IPv6 clients', () => {
  const key = (ip: string) => clientKey(ANONYMOUS, ip);

  it('are counted per /64', () => {
    const same = ['2001:db8:1:2::1', '2001:db8:1:2:ffff:ffff:ffff:ffff', '2001:DB8:0001:0002:0:0:0:9', '2001:db8:1:2:abcd::'];
    expect(new Set(same.map(key))).toEqual(new Set(['ip:2001:db8:1:2::']));
    expect(key('2001:db8:1:3::1')).not.toBe(key('2001:db8:1:2::1'));
    expect(key('2001:db8:1:2::1')).not.toBe(key('2001:db8:2:2::1'));
    // IPv4, and IPv4-mapped IPv6 as its IPv4 address.
    expect(key('::ffff:10.1.2.3')).toBe(key('10.1.2.3'));
    expect(key('10.1.2.3')).not.toBe(key('10.1.2.4'));
  });

  it('whatever the memo of normalised addresses forgot', () => {
    const before = key('2001:db8:9:9::1');
    // More addresses than the memo keeps: it only ever recomputes the same answer.
    for (let i = 0; i < 12_000; i++) key(`2001:db8:${(i >> 8).toString(16)}:${(i & 255).toString(16)}::1`);
    expect(key('2001:db8:9:9::1')).toBe(before);
    expect(key('2001:db8:9:9::2')).toBe(before);
  });
});

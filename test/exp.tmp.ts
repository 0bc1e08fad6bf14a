import { createServer } from 'node:http';
import { launchChromium } from './helpers/browser.ts';
import { startServerAt } from './helpers/server.ts';
const page = createServer((req, res) => { res.writeHead(200, {'content-type': 'text/html'}); res.end('<!doctype html><title>app</title>'); });
await new Promise<void>((r) => page.listen(0, '127.0.0.1', r));
const A = (page.address() as any).port;
const s = await startServerAt({ NODE_ENV: 'production', BCRYPT_COST: '10', CORS_ORIGINS: `http://127.0.0.1:${A}` });
await fetch(`${s.url}/api/auth/register`, { method: 'POST', headers: {'content-type':'application/json'}, body: JSON.stringify({name:'A', email:'a@example.test', password:'password123'}) });
const browser = await launchChromium();
const ctx = await browser.newContext();
const p = await ctx.newPage();
await p.goto(`http://127.0.0.1:${A}/`);
const out = await p.evaluate(async (api) => {
  const login = await fetch(`${api}/api/auth/login`, { method: 'POST', credentials: 'include', headers: {'content-type':'application/json'}, body: JSON.stringify({email:'a@example.test', password:'password123'}) });
  const me = await fetch(`${api}/graphql`, { method: 'POST', credentials: 'include', headers: {'content-type':'application/json'}, body: JSON.stringify({query:'{ me { id } }'}) });
  return [login.status, await me.json()];
}, s.url);
console.log(out, await ctx.cookies(s.url));
await browser.close(); await s.close(); page.close();

import { Agent, request as httpRequest } from 'node:http';

/**
 * Modest HTTP load for the failure tests: N clients, each with its own keep-alive
 * connection (node:http, one socket per client), sending GraphQL POSTs one after
 * another. Every request is recorded with when its head and body were handed to the
 * kernel (`sentAt`) and how it ended: a complete response, or the error's code, so a
 * test can tell a refused connection (ECONNREFUSED: nothing was sent) from a reset one.
 */
export interface Outcome {
  client: number;
  /** Which target (see LoadOptions.target) it went to. */
  target: string;
  variables: Record<string, unknown> | undefined;
  startedAt: number;
  /** When the whole request had been written to the socket; undefined if it never was. */
  sentAt: number | undefined;
  endedAt: number;
  status?: number;
  headers?: Record<string, string | string[] | undefined>;
  body?: any;
  /** e.g. ECONNREFUSED, ECONNRESET; undefined for a complete response. */
  error?: string;
}

export interface LoadOptions {
  clients: number;
  /** The base URL for the next request of a client (a load balancer may pick a live instance). */
  target(client: number): string;
  /** The next operation of a client. */
  operation(client: number, n: number): { query: string; variables?: Record<string, unknown>; headers?: Record<string, string> };
  /** Pause after a failed request, so a dead target is not hammered in a busy loop. */
  pauseAfterErrorMs?: number;
  /** Called with every outcome as it ends (a load balancer's passive health check, say). */
  onOutcome?(outcome: Outcome): void;
}

export interface Load {
  outcomes: Outcome[];
  /** Stops after each client's current request; resolves when all have. */
  stop(): Promise<void>;
}

export function startLoad(options: LoadOptions): Load {
  const outcomes: Outcome[] = [];
  let running = true;
  const loops = Array.from({ length: options.clients }, async (_, client) => {
    const agents = new Map<string, Agent>();
    const agentFor = (target: string) => {
      let agent = agents.get(target);
      if (!agent) agents.set(target, (agent = new Agent({ keepAlive: true, maxSockets: 1 })));
      return agent;
    };
    for (let n = 0; running; n++) {
      const target = options.target(client);
      const outcome = await send(agentFor(target), target, client, options.operation(client, n));
      outcomes.push(outcome);
      options.onOutcome?.(outcome);
      if (outcome.error && running) await new Promise((r) => setTimeout(r, options.pauseAfterErrorMs ?? 20));
    }
    for (const agent of agents.values()) agent.destroy();
  });
  return {
    outcomes,
    async stop() {
      running = false;
      await Promise.all(loops);
    },
  };
}

function send(
  agent: Agent,
  target: string,
  client: number,
  op: { query: string; variables?: Record<string, unknown>; headers?: Record<string, string> },
): Promise<Outcome> {
  const body = JSON.stringify({ query: op.query, variables: op.variables });
  const outcome: Outcome = { client, target, variables: op.variables, startedAt: Date.now(), sentAt: undefined, endedAt: 0 };
  return new Promise((resolve) => {
    let ended = false;
    const end = (fields: Partial<Outcome>) => {
      if (ended) return;
      ended = true;
      Object.assign(outcome, fields, { endedAt: Date.now() });
      resolve(outcome);
    };
    const req = httpRequest(`${target}/graphql`, {
      agent,
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/graphql-response+json',
        'content-length': Buffer.byteLength(body),
        ...op.headers,
      },
    });
    req.on('finish', () => (outcome.sentAt = Date.now()));
    req.on('error', (error: NodeJS.ErrnoException) => end({ error: error.code ?? error.message }));
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', (error: NodeJS.ErrnoException) => end({ error: error.code ?? error.message }));
      res.on('aborted', () => end({ error: 'ABORTED' }));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let parsed: unknown = text;
        try {
          parsed = JSON.parse(text);
        } catch {
          // not JSON
        }
        end({ status: res.statusCode, headers: res.headers, body: parsed });
      });
    });
    req.end(body);
  });
}

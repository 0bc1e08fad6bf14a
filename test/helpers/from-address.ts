import { Agent, request } from 'node:http';

/**
 * An HTTP client whose connections leave from one loopback address. Every address in
 * 127.0.0.0/8 is loopback, so one test can be thousands of clients, each seen by the
 * service as its own IP (the eviction attempts docs/limits.md rules out). Keep-alive, so each
 * client costs one connection.
 */
export interface AddressClient {
  readonly address: string;
  /** POSTs JSON and answers the status, the headers and the parsed body. */
  post(path: string, body: unknown, headers?: Record<string, string>): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; json: any }>;
  close(): void;
}

export function fromAddress(baseUrl: string, address: string): AddressClient {
  const agent = new Agent({ keepAlive: true, maxSockets: 1, localAddress: address });
  return {
    address,
    post(path, body, headers = {}) {
      const payload = JSON.stringify(body);
      return new Promise((resolve, reject) => {
        const req = request(
          new URL(path, baseUrl),
          {
            method: 'POST',
            agent,
            headers: { 'content-type': 'application/json', accept: 'application/json', 'content-length': Buffer.byteLength(payload), ...headers },
          },
          (response) => {
            const chunks: Buffer[] = [];
            response.on('data', (chunk: Buffer) => chunks.push(chunk));
            response.on('end', () => {
              const text = Buffer.concat(chunks).toString('utf8');
              let json: unknown;
              try {
                json = JSON.parse(text);
              } catch {
                json = undefined;
              }
              resolve({ status: response.statusCode ?? 0, headers: response.headers, json });
            });
            response.on('error', reject);
          },
        );
        req.on('error', reject);
        req.end(payload);
      });
    },
    close: () => agent.destroy(),
  };
}

/** The n-th loopback address of a /16 of 127.0.0.0/8 (n < 65,000), never 127.0.0.1. */
export function loopbackAddress(subnet: number, n: number): string {
  return `127.${subnet}.${Math.floor(n / 250) + 1}.${(n % 250) + 1}`;
}

import { Agent } from 'node:http';
import { send } from './http-request.js';

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
    async post(path, body, headers = {}) {
      const sent = await send(baseUrl, 'POST', path, { 'content-type': 'application/json', accept: 'application/json', ...headers }, JSON.stringify(body), agent);
      return { status: sent.status, headers: sent.headers, json: sent.json };
    },
    close: () => agent.destroy(),
  };
}

/** The n-th loopback address of a /16 of 127.0.0.0/8 (n < 65,000), never 127.0.0.1. */
export function loopbackAddress(subnet: number, n: number): string {
  return `127.${subnet}.${Math.floor(n / 250) + 1}.${(n % 250) + 1}`;
}

declare module 'autocannon' {
  interface Result {
    latency: { p50: number; p99: number; average: number };
    requests: { average: number; total: number };
    duration: number;
    '2xx': number;
    non2xx: number;
    errors: number;
    timeouts: number;
  }
  interface Options {
    url: string;
    connections?: number;
    amount?: number;
    duration?: number;
    pipelining?: number;
    method?: string;
    headers?: Record<string, string>;
    requests?: {
      method?: string;
      path?: string;
      headers?: Record<string, string>;
      setupRequest?: (req: { body?: string; [k: string]: unknown }) => unknown;
    }[];
  }
  /** A run: awaitable for its result, and an emitter of each response as it arrives. */
  interface Instance extends PromiseLike<Result> {
    on(
      event: 'response',
      listener: (client: unknown, statusCode: number, resBytes: number, responseTime: number) => void,
    ): this;
  }
  function autocannon(options: Options): Instance;
  export default autocannon;
}

// The few parts of autocannon 8's programmatic API the benchmark uses (the package ships no types).
declare module 'autocannon' {
  namespace autocannon {
    interface Request {
      method?: string;
      path?: string;
      headers?: Record<string, string>;
      body?: string;
      /** Called before every request on a connection; returns the request to send. */
      setupRequest?: (req: Request, context: Record<string, unknown>) => Request;
      /** Called with every response of this request (the body as a string). */
      onResponse?: (status: number, body: string, context: Record<string, unknown>) => void;
    }
    interface Options {
      url: string;
      connections?: number;
      duration?: number;
      timeout?: number;
      pipelining?: number;
      method?: string;
      headers?: Record<string, string>;
      body?: string;
      requests?: Request[];
      /** Requests a second over all connections (autocannon paces them). */
      overallRate?: number;
    }
    interface Histogram {
      average: number;
      mean: number;
      stddev: number;
      min: number;
      max: number;
      p50: number;
      p90: number;
      p97_5: number;
      p99: number;
      total?: number;
    }
    interface Result {
      duration: number;
      requests: Histogram & { sent: number };
      latency: Histogram;
      errors: number;
      timeouts: number;
      non2xx: number;
      resets: number;
      '2xx': number;
      statusCodeStats: Record<string, { count: number }>;
    }
  }
  function autocannon(opts: autocannon.Options): Promise<autocannon.Result>;
  export = autocannon;
}

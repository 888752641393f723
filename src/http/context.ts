// The context as the process fills it: core's AppContext with the whole configuration and the
// Prometheus metrics (the HTTP apps read listener settings and serve /metrics).
import type { Config } from '../config.ts';
import type { AppContext } from '../core/context.ts';
import type { Metrics } from '../metrics/registry.ts';

export type ServerContext = AppContext<Config, Metrics>;

#!/usr/bin/env node
// Runs the TypeScript CLI through tsx's loader (Node 20 cannot run .ts by itself).
import { register } from 'tsx/esm/api';

register();
await import('../src/cli.ts');

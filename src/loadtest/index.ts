/** `dibs loadtest` as a library: run a load test, verify a run, render its report. */
export { runLoadtest } from './run.js';
export {
  verifyRun,
  verifyPool,
  type VerifyExpectations,
  type VerifyInput,
  type VerifyResult,
  type VerifySummary,
} from './verify.js';
export { planLoad, arrivalOffset } from './plan.js';
export { renderSvg } from './svg.js';
export { formatReport, formatProgress } from './format.js';
export { registerLoadtestCommand } from './command.js';
export { DEFAULTS as LOADTEST_DEFAULTS } from './options.js';
export type * from './types.js';

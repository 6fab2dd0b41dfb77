// agentJob and agentRateLimiter workflows. (Being written: issue 5.)
export {};

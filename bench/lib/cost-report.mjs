/**
 * Every GraphQL answer carries its cost report, whose remaining points change from one
 * request to the next (docs/limits.md, "Cost"): bodies are compared without it.
 */
const COST_REPORT = /,"extensions":\{"cost":\{"requestedQueryCost":[^{}]*"throttleStatus":\{[^{}]*\}\}\}\}$/;

/** The body as it would be without `extensions.cost` (its last member). */
export const withoutCost = (body) => body.replace(COST_REPORT, '}');

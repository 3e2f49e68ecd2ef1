export * from "./contract.js";
export * from "./errors.js";
export * from "./received.js";
export * from "./client.js";

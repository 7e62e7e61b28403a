/** The rules of pool steps: the reference model every store is held to (see ../model/pools.ts). */
export * from '../model/pools.js';

/** @ferry/test-support: public surface. */
export {};

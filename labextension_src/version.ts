/** The frontend's version (package.json), compared with the server's at start. */
declare function require(id: string): any;

export const FRONTEND_VERSION: string = require('../package.json').version;

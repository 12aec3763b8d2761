/*
 * Load a dependency-free TypeScript module of the panel for a unit test,
 * transpiled in memory (`npm test` compiles only the modules tsconfig.test.json
 * lists; these ones import nothing, so no project build is needed).
 */
'use strict';

const fs = require('node:fs');
const path = require('node:path');
const Module = require('node:module');
const ts = require('typescript');

module.exports = function loadTs(relative) {
  const file = path.join(__dirname, '..', relative);
  const { outputText, diagnostics } = ts.transpileModule(fs.readFileSync(file, 'utf8'), {
    fileName: file,
    reportDiagnostics: true,
    compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2021 }
  });
  if (diagnostics && diagnostics.length) {
    throw new Error(`${relative}: ${ts.flattenDiagnosticMessageText(diagnostics[0].messageText, '\n')}`);
  }
  const mod = new Module(file, module);
  mod.filename = file;
  mod.paths = Module._nodeModulePaths(path.dirname(file));
  mod._compile(outputText, file);
  return mod.exports;
};

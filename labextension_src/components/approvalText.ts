/**
 * The approval card's words per tool and field. Each text is written inside
 * its own `trans.__()` call (not looked up in a table and passed as a
 * variable), so translation tools can extract it.
 */
import { TranslationBundle } from '@jupyterlab/translation';

/** What the agent asks to do, per tool ("run a cell"); an unknown tool is named. */
export function actionText(trans: TranslationBundle, tool: string): string {
  switch (tool) {
    case 'run_cell':
      return trans.__('run a cell');
    case 'execute_command':
      return trans.__('run a shell command');
    case 'write_file':
      return trans.__('write a file');
    case 'edit_file':
      return trans.__('edit a file');
    case 'add_markdown':
      return trans.__('add a Markdown cell');
    case 'edit_cell':
      return trans.__('change a cell and run it again');
    case 'restart_kernel':
      return trans.__('restart the kernel');
    case 'sql_query':
      return trans.__('run SQL on a database');
    case 'write_todos':
      return trans.__('follow this plan');
    case 'explore':
      return trans.__('explore in a copy of the kernel, unsandboxed');
    default:
      return trans.__('use %1', tool);
  }
}

/** The editor's accessible name per edited field (undefined: the JSON of all arguments). */
export function editLabel(trans: TranslationBundle, field: string | undefined): string {
  switch (field) {
    case 'code':
      return trans.__('Edit code');
    case 'source':
      return trans.__('Edit the cell’s new source');
    case 'command':
      return trans.__('Edit command');
    case 'sql':
      return trans.__('Edit SQL');
    default:
      return trans.__('Edit arguments (JSON)');
  }
}

/** What a kernel restart costs, shown before the user approves one. */
export function restartWarning(trans: TranslationBundle): string {
  return trans.__(
    'Restarting the kernel clears its memory: every variable, import and loaded dataset is lost, and the cells that made them must run again.'
  );
}

/** The key that goes with Enter to approve: ⌘ on a Mac, Ctrl elsewhere. */
export function modKey(trans: TranslationBundle): string {
  return typeof navigator !== 'undefined' && /Mac|iP(hone|ad)/.test(navigator.platform) ? '⌘' : trans.__('Ctrl');
}

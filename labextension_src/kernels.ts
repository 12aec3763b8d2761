/**
 * Restarting a kernel the agent's Stop could not interrupt
 * (`error.kind == "kernel_unresponsive"`).
 */
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

/** Restarts the kernel with this id; rejects with what went wrong. */
export type KernelRestarter = (kernelId: string) => Promise<void>;

/**
 * `POST api/kernels/{id}/restart`, for a kernel no open notebook holds
 * (makeRequest adds the token and the XSRF header like any Jupyter request).
 */
export async function restartKernelById(
  settings: ServerConnection.ISettings,
  kernelId: string
): Promise<void> {
  const url = URLExt.join(settings.baseUrl, 'api/kernels', encodeURIComponent(kernelId), 'restart');
  let response: Response;
  try {
    response = await ServerConnection.makeRequest(url, { method: 'POST' }, settings);
  } catch (error) {
    throw new ServerConnection.NetworkError(error as TypeError);
  }
  if (!response.ok) {
    throw await ServerConnection.ResponseError.create(response);
  }
}

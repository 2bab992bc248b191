/**
 * Imported first by the server's entry point, before anything that loads Elysia: the process always
 * runs in production mode, whatever NODE_ENV says. In development mode Elysia's validation errors
 * serialize the whole offending body (pretty-printed, on every refusal), and Bun serves its
 * development error page, which shows the working directory and module paths.
 */
process.env.NODE_ENV = 'production'

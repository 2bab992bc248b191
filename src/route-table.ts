// Written by `bun scripts/route-table.ts` from the files under routes/ (their paths as the folder gives them). Do not edit by hand.
import type { MountedRoute } from './http/routes-loader'
import route0 from '../routes/index'
import route1 from '../routes/admin/aliases'
import route2 from '../routes/admin/config'
import route3 from '../routes/admin/keys'
import route4 from '../routes/admin/keys/[id]'
import route5 from '../routes/admin/reload'
import route6 from '../routes/admin/requests'
import route7 from '../routes/admin/requests/[id]'
import route8 from '../routes/admin/tiers'
import route9 from '../routes/admin/upstreams'
import route10 from '../routes/admin/usage'
import route11 from '../routes/admin/usage/series'
import route12 from '../routes/dashboard'
import route13 from '../routes/dashboard/assets/[file]'
import route14 from '../routes/health'
import route15 from '../routes/metrics'
import route16 from '../routes/swagger/assets/[file]'
import route17 from '../routes/v1/chat/completions'
import route18 from '../routes/v1/embeddings'
import route19 from '../routes/v1/messages'
import route20 from '../routes/v1/messages/count_tokens'
import route21 from '../routes/v1/models'
import route22 from '../routes/v1/models/[prefix]'
import route23 from '../routes/v1/models/[prefix]/[name]'
import route24 from '../routes/v1/responses'
import route25 from '../routes/v1/responses/[id]'
import route26 from '../routes/v1/responses/[id]/input_items'
import route27 from '../routes/v1/responses/input_tokens'
import route28 from '../routes/v1/usage'
import route29 from '../routes/v1beta/models/[prefix]'
import route30 from '../routes/v1beta/models/[prefix]/[action]'

export const ROUTE_TABLE: MountedRoute[] = [
  { path: '/', factory: route0 },
  { path: '/admin/aliases', factory: route1 },
  { path: '/admin/config', factory: route2 },
  { path: '/admin/keys', factory: route3 },
  { path: '/admin/keys/:id', factory: route4 },
  { path: '/admin/reload', factory: route5 },
  { path: '/admin/requests', factory: route6 },
  { path: '/admin/requests/:id', factory: route7 },
  { path: '/admin/tiers', factory: route8 },
  { path: '/admin/upstreams', factory: route9 },
  { path: '/admin/usage', factory: route10 },
  { path: '/admin/usage/series', factory: route11 },
  { path: '/dashboard', factory: route12 },
  { path: '/dashboard/assets/:file', factory: route13 },
  { path: '/health', factory: route14 },
  { path: '/metrics', factory: route15 },
  { path: '/swagger/assets/:file', factory: route16 },
  { path: '/v1/chat/completions', factory: route17 },
  { path: '/v1/embeddings', factory: route18 },
  { path: '/v1/messages', factory: route19 },
  { path: '/v1/messages/count_tokens', factory: route20 },
  { path: '/v1/models', factory: route21 },
  { path: '/v1/models/:prefix', factory: route22 },
  { path: '/v1/models/:prefix/:name', factory: route23 },
  { path: '/v1/responses', factory: route24 },
  { path: '/v1/responses/:id', factory: route25 },
  { path: '/v1/responses/:id/input_items', factory: route26 },
  { path: '/v1/responses/input_tokens', factory: route27 },
  { path: '/v1/usage', factory: route28 },
  { path: '/v1beta/models/:prefix', factory: route29 },
  { path: '/v1beta/models/:prefix/:action', factory: route30 },
]

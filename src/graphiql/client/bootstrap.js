// Starts GraphiQL on the page served at GET /graphql (outside production only).
// Queries and mutations are POSTed to /graphql on this origin, carrying the auth-token
// cookie; subscriptions go over the WebSocket at /graphql (graphql-transport-ws), whose
// upgrade carries the same cookie. Globals come from the UMD builds loaded before this file.
/* global React, ReactDOM, GraphiQL, graphqlWs */
(function () {
  'use strict';
  // GraphiQL's dialogs add one <style> element at run time; react-remove-scroll gives it
  // this nonce, which the page's Content-Security-Policy allows (src/graphiql/page.ts).
  window.__webpack_nonce__ = document.currentScript.nonce;
  var endpoint = location.origin + '/graphql';
  // Lazy: the socket opens with the first subscription and closes after the last one,
  // so a subscription started after signing in uses the new cookie.
  var wsClient = graphqlWs.createClient({ url: endpoint.replace(/^http/, 'ws'), lazy: true });
  var fetcher = GraphiQL.createFetcher({
    url: endpoint,
    wsClient: wsClient,
    fetch: function (input, init) {
      return fetch(input, Object.assign({}, init, { credentials: 'same-origin' }));
    },
  });
  var container = document.getElementById('graphiql');
  var root = ReactDOM.createRoot(container);
  root.render(
    React.createElement(GraphiQL, {
      fetcher: fetcher,
      defaultEditorToolsVisibility: true,
      // A first visit opens on a query of the demo data (src/graphiql/client/example.graphql).
      defaultQuery: container.dataset.defaultQuery,
    }),
  );
})();
